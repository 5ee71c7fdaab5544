#include "export/group_report.h"

#include <fmt/format.h>

#include <numeric>

#include "export/mindspeed_json.h"
#include "ir/parallel_config.h"

namespace autopar::exporters {

namespace {

std::string dollars(double value) { return value > 0 ? fmt::format("{:.2f}", value) : "-"; }

/// "TP 2 PP 1 DP 8 MBS 2 SP, recompute none, ZeRO 1".
std::string configurationOf(const planner::MegatronConfig& best) {
  return fmt::format("{}, recompute {}, ZeRO {}", ir::shapeName(best),
                     ir::recomputeName(best.recompute), best.zero);
}

/// "h100 + a100".
std::string membersOf(const planner::SharedPlan& plan) {
  std::string names;
  for (const planner::GroupOutcome& share : plan.shares) {
    names += (names.empty() ? "" : " + ") + share.group.name;
  }
  return names;
}

int devicesOf(const planner::SharedPlan& plan) {
  return std::accumulate(plan.shares.begin(), plan.shares.end(), 0,
                         [](int sum, const auto& share) { return sum + share.group.devices(); });
}

std::string row(const std::string& plan, int devices, const std::string& configuration,
                const planner::Throughput* throughput, bool chosen) {
  return fmt::format(
      "{:<14} {:>7}  {:<48} {:>10} {:>11} {:>9} {:>8}{}\n", plan, devices, configuration,
      throughput ? fmt::format("{:.3f} s", throughput->stepSeconds) : "-",
      throughput ? fmt::format("{:.0f}", throughput->tokensPerSecond) : "-",
      throughput ? dollars(throughput->dollarsPerHour) : "-",
      throughput ? dollars(throughput->dollarsPerMillionTokens) : "-", chosen ? "  <- chosen" : "");
}

/// The chosen plan across groups: each share, then the synchronisation.
std::string sharedDetail(const planner::SharedPlan& plan) {
  std::string text;
  for (const planner::GroupOutcome& share : plan.shares) {
    const planner::ConfigEstimate& estimate = *share.found->estimate;
    text +=
        fmt::format("  {}: {} samples on {} x {}, {}, {} micro-batches: {:.3f} s, peak {} of {}\n",
                    share.group.name, share.samples, share.group.devices(), share.group.device,
                    configurationOf(*share.found->best), estimate.microBatches,
                    share.throughput.stepSeconds, planner::formatBytes(estimate.peakBytes()),
                    planner::formatBytes(estimate.cluster.device.memoryBytes));
  }
  text += fmt::format(
      "  then the gradients all-reduce across the groups over {}: {:.3f} s after the slowest "
      "group's {:.3f} s (each group first reduces its own, as on one group)\n",
      plan.syncLink, plan.syncSeconds, plan.slowestGroupSeconds);
  return text;
}

}  // namespace

std::string formatGroupSearch(const planner::GroupSearch& search,
                              const SearchReportContext& context) {
  const bool cost = search.options.objective == planner::Objective::kCost;
  std::string text =
      fmt::format("autopar search: {} on {}: {} device groups, global batch {}, objective {}\n\n",
                  context.model, search.cluster, search.groups.size(), context.globalBatch,
                  cost ? "cost (dollars per million tokens)" : "fastest");
  text += fmt::format("{:<14} {:>7}  {:<48} {:>10} {:>11} {:>9} {:>8}\n", "plan", "devices",
                      "configuration", "step", "tokens/s", "$/hour", "$/M tok");
  const auto& chosen = search.chosen;
  for (size_t i = 0; i < search.groups.size(); ++i) {
    const planner::GroupOutcome& outcome = search.groups[i];
    text += row(fmt::format("{} alone", outcome.group.name), outcome.group.devices(),
                outcome.found ? configurationOf(*outcome.found->best) : "nothing fits",
                outcome.found ? &outcome.throughput : nullptr,
                chosen && !chosen->shared && chosen->index == i);
  }
  for (size_t i = 0; i < search.shared.size(); ++i) {
    const planner::SharedPlan& plan = search.shared[i];
    std::string split;
    for (const planner::GroupOutcome& share : plan.shares) {
      split += (split.empty() ? "" : " + ") + std::to_string(share.samples);
    }
    text += row(membersOf(plan), devicesOf(plan), "samples " + split, &plan.throughput,
                chosen && chosen->shared && chosen->index == i);
  }
  for (const planner::GroupOutcome& outcome : search.groups) {
    if (!outcome.found) text += fmt::format("\n{}: {}\n", outcome.group.name, outcome.unmet);
  }
  if (!search.options.crossGroup) {
    text += "\nplans across groups not searched (--no-cross-group)\n";
  } else if (search.shared.empty()) {
    text +=
        "\nno plan across groups: fewer than two groups fit the model alone, and a plan "
        "across groups holds a whole replica on each\n";
  }
  if (!chosen) return text;
  const std::string why = cost ? "the fewest dollars per million tokens" : "the fastest step";
  int idle = 0;
  std::string idleNames;
  auto idleGroup = [&](const planner::GroupOutcome& outcome) {
    idle += outcome.group.devices();
    idleNames += (idleNames.empty() ? "" : ", ") + outcome.group.name;
  };
  if (!chosen->shared) {
    const planner::GroupOutcome& group = search.groups[chosen->index];
    for (size_t i = 0; i < search.groups.size(); ++i) {
      if (i != chosen->index) idleGroup(search.groups[i]);
    }
    text += fmt::format("\nchosen: {} alone ({}); {} idle devices ({})\n\n", group.group.name, why,
                        idle, idleNames);
    return text + formatSearchReport(*group.found, context);
  }
  const planner::SharedPlan& plan = search.shared[chosen->index];
  for (const planner::GroupOutcome& outcome : search.groups) {
    const bool used = std::any_of(plan.shares.begin(), plan.shares.end(), [&](const auto& share) {
      return share.group.name == outcome.group.name;
    });
    if (!used) idleGroup(outcome);
  }
  text += fmt::format("\nchosen: {} sharing the batch ({}){}\n", membersOf(plan), why,
                      idle > 0 ? fmt::format("; {} idle devices ({})", idle, idleNames) : "");
  return text + sharedDetail(plan);
}

nlohmann::ordered_json sharedPlanJson(const planner::GroupSearch& search,
                                      const planner::SharedPlan& plan) {
  nlohmann::ordered_json json;
  json["cluster"] = search.cluster;
  json["global_batch_size"] = search.globalBatch;
  json["e2e_time"] = plan.throughput.stepSeconds * 1e3;
  json["tokens_per_second"] = plan.throughput.tokensPerSecond;
  json["cross_group_sync_time"] = plan.syncSeconds * 1e3;
  json["cross_group_link"] = plan.syncLink;
  json["dollars_per_hour"] = plan.throughput.dollarsPerHour;
  json["dollars_per_million_tokens"] = plan.throughput.dollarsPerMillionTokens;
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const planner::GroupOutcome& share : plan.shares) {
    const planner::MegatronConfig& best = *share.found->best;
    const planner::ConfigEstimate& estimate = *share.found->estimate;
    groups.push_back(
        {{"name", share.group.name},
         {"device", share.group.device},
         {"nodes", share.group.nodes},
         {"devices_per_node", share.group.devicesPerNode},
         {"samples", share.samples},
         {"config", mindspeedOptimalConfig(best, planner::layersPerStage(estimate, best.pp, "llm"),
                                           planner::layersPerStage(estimate, best.pp, "vit"),
                                           estimate.sequence, estimate.worldSize,
                                           share.found->bestSeconds)}});
  }
  json["groups"] = std::move(groups);
  return json;
}

}  // namespace autopar::exporters
