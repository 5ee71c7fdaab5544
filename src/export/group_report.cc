#include "export/group_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "export/mindspeed_json.h"
#include "ir/parallel_config.h"

namespace autopar::exporters {

namespace {

/// "1 node", "4 nodes".
std::string nodes(int count) { return fmt::format("{} node{}", count, count == 1 ? "" : "s"); }

std::string dollars(double value) { return value > 0 ? fmt::format("{:.2f}", value) : "-"; }

/// "TP 2 PP 1 DP 8 MBS 2 SP, recompute none, ZeRO 1".
std::string configurationOf(const planner::MegatronConfig& best) {
  return fmt::format("{}, recompute {}, ZeRO {}", ir::shapeName(best),
                     ir::recomputeName(best.recompute), best.zero);
}

/// "h100 + a100", or with sizes chosen (`sized`) "h100 x1 + a100 x4" (nodes).
std::string membersOf(const planner::SharedPlan& plan, bool sized = false) {
  std::string names;
  for (const planner::GroupOutcome& share : plan.shares) {
    names += (names.empty() ? "" : " + ") + share.group.name +
             (sized ? fmt::format(" x{}", share.group.nodes) : "");
  }
  return names;
}

int devicesOf(const planner::SharedPlan& plan) {
  return std::accumulate(plan.shares.begin(), plan.shares.end(), 0,
                         [](int sum, const auto& share) { return sum + share.group.devices(); });
}

/// One row of the plans table.
struct PlanRow {
  std::string plan;
  int devices = 0;
  std::string configuration;
  const planner::Throughput* throughput = nullptr;  ///< none: no winner
  bool chosen = false;
};

/// The table, its plan column as wide as its longest name.
std::string planTable(const std::vector<PlanRow>& rows) {
  size_t width = 4;
  for (const PlanRow& row : rows) width = std::max(width, row.plan.size());
  std::string text =
      fmt::format("{:<{}} {:>7}  {:<48} {:>10} {:>11} {:>9} {:>8}\n", "plan", width, "devices",
                  "configuration", "step", "tokens/s", "$/hour", "$/M tok");
  for (const PlanRow& row : rows) {
    const planner::Throughput* throughput = row.throughput;
    text += fmt::format("{:<{}} {:>7}  {:<48} {:>10} {:>11} {:>9} {:>8}{}\n", row.plan, width,
                        row.devices, row.configuration,
                        throughput ? fmt::format("{:.3f} s", throughput->stepSeconds) : "-",
                        throughput ? fmt::format("{:.0f}", throughput->tokensPerSecond) : "-",
                        throughput ? dollars(throughput->dollarsPerHour) : "-",
                        throughput ? dollars(throughput->dollarsPerMillionTokens) : "-",
                        row.chosen ? "  <- chosen" : "");
  }
  return text;
}

/// The availability question: what was offered, the constraints, and what the search looked at.
std::string offeredText(const planner::GroupSearch& search) {
  const planner::DeviceChoice& choice = *search.devices;
  std::string offered;
  for (size_t g = 0; g < search.groups.size(); ++g) {
    offered += fmt::format("{}{} {}", offered.empty() ? "" : ", ", search.groups[g].group.name,
                           nodes(choice.offered.nodes[g]));
  }
  std::string constraints;
  if (choice.offered.minTokensPerSecond > 0) {
    constraints += fmt::format(", at least {:.0f} tokens/s", choice.offered.minTokensPerSecond);
  }
  if (choice.offered.maxDollarsPerHour > 0) {
    constraints += fmt::format(", at most ${:g}/hour", choice.offered.maxDollarsPerHour);
  }
  std::string sizes;
  for (size_t g = 0; g < search.groups.size(); ++g) {
    sizes += fmt::format("{}{} {}", sizes.empty() ? "" : "; ", search.groups[g].group.name,
                         fmt::join(choice.sizes[g], ","));
  }
  return fmt::format(
      "on offer: {}{}\nsearched alone at nodes {}; {} combinations priced, {} planned across "
      "groups exactly\nrows: each group alone at its best size within the constraints, "
      "then the plans across groups that meet them\n\n",
      offered, constraints, sizes, choice.combinations, choice.plannedExactly);
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
  if (search.devices) text += offeredText(search);
  const auto& chosen = search.chosen;
  std::vector<PlanRow> rows;
  for (size_t i = 0; i < search.groups.size(); ++i) {
    const planner::GroupOutcome& outcome = search.groups[i];
    rows.push_back({search.devices && outcome.found
                        ? fmt::format("{} x{}", outcome.group.name, outcome.group.nodes)
                        : fmt::format("{} alone", outcome.group.name),
                    outcome.group.devices(),
                    outcome.found    ? configurationOf(*outcome.found->best)
                    : search.devices ? outcome.unmet
                                     : "nothing fits",
                    outcome.found ? &outcome.throughput : nullptr,
                    chosen && !chosen->shared && chosen->index == i});
  }
  for (size_t i = 0; i < search.shared.size(); ++i) {
    const planner::SharedPlan& plan = search.shared[i];
    std::string split;
    for (const planner::GroupOutcome& share : plan.shares) {
      split += (split.empty() ? "" : " + ") + std::to_string(share.samples);
    }
    rows.push_back({membersOf(plan, search.devices.has_value()), devicesOf(plan),
                    "samples " + split, &plan.throughput,
                    chosen && chosen->shared && chosen->index == i});
  }
  text += planTable(rows);
  for (const planner::GroupOutcome& outcome : search.groups) {
    if (!outcome.found && !search.devices) {
      text += fmt::format("\n{}: {}\n", outcome.group.name, outcome.unmet);
    }
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
  // The groups the chosen plan uses, at the sizes it uses them.
  std::vector<const planner::GroupOutcome*> used;
  if (chosen->shared) {
    for (const planner::GroupOutcome& share : search.shared[chosen->index].shares) {
      used.push_back(&share);
    }
  } else {
    used.push_back(&search.groups[chosen->index]);
  }
  auto usedNodes = [&](const std::string& name) {
    const auto at = std::find_if(used.begin(), used.end(),
                                 [&](const auto* outcome) { return outcome->group.name == name; });
    return at == used.end() ? 0 : (*at)->group.nodes;
  };
  text += "\nchosen: " +
          (chosen->shared ? membersOf(search.shared[chosen->index], search.devices.has_value()) +
                                " sharing the batch"
                          : used.front()->group.name + " alone") +
          fmt::format(" ({})", why);
  std::string others;
  int idle = 0;
  for (size_t g = 0; g < search.groups.size(); ++g) {
    const cluster::DeviceGroup& group = search.groups[g].group;
    if (search.devices) {
      others += fmt::format("{}{} {} of {}", others.empty() ? "" : ", ", group.name,
                            usedNodes(group.name), nodes(search.devices->offered.nodes[g]));
    } else if (usedNodes(group.name) == 0) {
      idle += group.devices();
      others += (others.empty() ? "" : ", ") + group.name;
    }
  }
  if (search.devices) text += "; devices used: " + others;
  if (idle > 0) text += fmt::format("; {} idle devices ({})", idle, others);
  if (chosen->shared) return text + "\n" + sharedDetail(search.shared[chosen->index]);
  return text + "\n\n" + formatSearchReport(*used.front()->found, context);
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
