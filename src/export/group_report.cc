#include "export/group_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string_view>

#include "export/comment_line.h"
#include "export/launch_script.h"
#include "export/mindspeed_json.h"
#include "ir/parallel_config.h"

namespace autopar::exporters {

namespace {

/// Appends `item` to a `separator`-separated list.
void appendItem(std::string& list, std::string_view separator, std::string_view item) {
  if (!list.empty()) list += separator;
  list += item;
}

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
    appendItem(
        names, " + ",
        sized ? fmt::format("{} x{}", share.group.name, share.group.nodes) : share.group.name);
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
        fmt::format("  {}: {} samples on {} x {}, {}, {} micro-batch{}: {:.3f} s, peak {} of {}\n",
                    share.group.name, share.samples, share.group.devices(), share.group.device,
                    configurationOf(*share.found->best), estimate.microBatches,
                    estimate.microBatches == 1 ? "" : "es", share.throughput.stepSeconds,
                    planner::formatBytes(estimate.peakBytes()),
                    planner::formatBytes(estimate.cluster.device.memoryBytes));
  }
  text += fmt::format(
      "  then the gradients all-reduce across the groups over {}: {:.3f} s after the slowest "
      "group's {:.3f} s (each group first reduces its own, as on one group)\n",
      plan.syncLink, plan.syncSeconds, plan.slowestGroupSeconds);
  return text;
}

/// "a100 -> h100 pipeline": its first stages' group, then the last stages'.
std::string pipelineName(const planner::GroupSearch& search,
                         const planner::SplitPipeline& pipeline) {
  return fmt::format("{} -> {} pipeline", search.groups[pipeline.front].group.name,
                     search.groups[pipeline.back].group.name);
}

/// "TP 2 PP 2+1 DP 8 MBS 1 SP, layers 9,9|22, recompute none": stages per group, layers per stage.
std::string pipelineShape(const planner::SplitPipeline& pipeline) {
  const planner::MegatronConfig& config = pipeline.config;
  std::string front;
  std::string back;
  for (size_t s = 0; s < pipeline.layers.size(); ++s) {
    std::string& part = pipeline.groupOf(s) == pipeline.front ? front : back;
    appendItem(part, ",", std::to_string(pipeline.layers[s]));
  }
  return fmt::format("TP {} PP {}+{} DP {} MBS {}{}, layers {}|{}, recompute {}", config.tp,
                     pipeline.frontStages, config.pp - pipeline.frontStages, config.dp, config.mbs,
                     config.sequenceParallel ? " SP" : "", front, back,
                     ir::recomputeName(config.recompute));
}

/// The chosen pipeline across groups: each stage's group, layers, time and memory, the crossing.
std::string pipelineDetail(const planner::GroupSearch& search,
                           const planner::SplitPipeline& pipeline) {
  std::string text;
  for (size_t s = 0; s < pipeline.layers.size(); ++s) {
    const cluster::DeviceGroup& group = search.groups[pipeline.groupOf(s)].group;
    const cost::StageCost& cost = pipeline.report.stages[s];
    text += fmt::format(
        "  stage {}: {} layer{} on {} x {} ({}), forward + backward {:.1f} ms a micro-batch, peak "
        "{} of {}\n",
        s, pipeline.layers[s], pipeline.layers[s] == 1 ? "" : "s",
        pipeline.config.tp * pipeline.config.dp, group.device, group.name,
        (cost.forwardSeconds + cost.backwardSeconds) * 1e3,
        planner::formatBytes(pipeline.peakBytes[s]), planner::formatBytes(pipeline.deviceBytes[s]));
  }
  text += fmt::format(
      "  {} micro-batches under 1F1B; a micro-batch's activations cross {} in {:.2f} ms; step "
      "{:.3f} s (bubble {:.3f} s)\n",
      pipeline.pipeline.microBatches, pipeline.link, pipeline.boundarySeconds * 1e3,
      pipeline.step.stepSeconds, pipeline.step.bubbleSeconds);
  return text;
}

/// The plans table's rows: each group alone, each shared plan, each pipeline.
std::vector<PlanRow> planRows(const planner::GroupSearch& search) {
  using Choice = planner::GroupSearch::Choice;
  const auto& chosen = search.chosen;
  auto isChosen = [&](Choice::Kind kind, size_t index) {
    return chosen && chosen->kind == kind && chosen->index == index;
  };
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
                    outcome.found ? &outcome.throughput : nullptr, isChosen(Choice::kAlone, i)});
  }
  for (size_t i = 0; i < search.shared.size(); ++i) {
    const planner::SharedPlan& plan = search.shared[i];
    std::string split;
    for (const planner::GroupOutcome& share : plan.shares) {
      appendItem(split, " + ", std::to_string(share.samples));
    }
    rows.push_back({membersOf(plan, search.devices.has_value()), devicesOf(plan),
                    "samples " + split, &plan.throughput, isChosen(Choice::kShared, i)});
  }
  for (size_t i = 0; i < search.pipelines.size(); ++i) {
    const planner::SplitPipeline& pipeline = search.pipelines[i];
    rows.push_back({pipelineName(search, pipeline),
                    search.groups[pipeline.front].group.devices() +
                        search.groups[pipeline.back].group.devices(),
                    pipelineShape(pipeline), &pipeline.throughput, isChosen(Choice::kPipeline, i)});
  }
  return rows;
}

/// "chosen: ..." with the devices it uses or leaves idle, then the chosen plan in detail.
std::string chosenText(const planner::GroupSearch& search, const SearchReportContext& context) {
  using Choice = planner::GroupSearch::Choice;
  const auto& chosen = search.chosen;
  const bool cost = search.options.objective == planner::Objective::kCost;
  std::string text;
  const std::string why = cost ? "the fewest dollars per million tokens" : "the fastest step";
  // The nodes of each group the chosen plan uses.
  std::map<std::string, int> used;
  std::string what;
  switch (chosen->kind) {
    case Choice::kAlone:
      used[search.groups[chosen->index].group.name] = search.groups[chosen->index].group.nodes;
      what = search.groups[chosen->index].group.name + " alone";
      break;
    case Choice::kShared:
      for (const planner::GroupOutcome& share : search.shared[chosen->index].shares) {
        used[share.group.name] = share.group.nodes;
      }
      what = membersOf(search.shared[chosen->index], search.devices.has_value()) +
             " sharing the batch";
      break;
    case Choice::kPipeline: {
      const planner::SplitPipeline& pipeline = search.pipelines[chosen->index];
      for (size_t g : {pipeline.front, pipeline.back}) {
        used[search.groups[g].group.name] = search.groups[g].group.nodes;
      }
      what = pipelineName(search, pipeline);
      break;
    }
  }
  text += fmt::format("\nchosen: {} ({})", what, why);
  std::string others;
  int idle = 0;
  for (size_t g = 0; g < search.groups.size(); ++g) {
    const cluster::DeviceGroup& group = search.groups[g].group;
    const int nodesUsed = used.contains(group.name) ? used[group.name] : 0;
    if (search.devices) {
      others += fmt::format("{}{} {} of {}", others.empty() ? "" : ", ", group.name, nodesUsed,
                            nodes(search.devices->offered.nodes[g]));
    } else if (nodesUsed == 0) {
      idle += group.devices();
      appendItem(others, ", ", group.name);
    }
  }
  if (search.devices) text += "; devices used: " + others;
  if (idle > 0) text += fmt::format("; {} idle devices ({})", idle, others);
  switch (chosen->kind) {
    case Choice::kShared:
      return text + "\n" + sharedDetail(search.shared[chosen->index]);
    case Choice::kPipeline:
      return text + "\n" + pipelineDetail(search, search.pipelines[chosen->index]);
    case Choice::kAlone:
      break;
  }
  return text + "\n\n" + formatSearchReport(*search.groups[chosen->index].found, context);
}

/// What every plan across groups' JSON opens with: the cluster, the batch, the step (ms, as seed
/// 003's e2e_time), tokens/s and the price.
nlohmann::ordered_json planHead(const planner::GroupSearch& search,
                                const planner::Throughput& throughput) {
  nlohmann::ordered_json json;
  json["cluster"] = search.cluster;
  json["global_batch_size"] = search.globalBatch;
  json["e2e_time"] = throughput.stepSeconds * 1e3;
  json["tokens_per_second"] = throughput.tokensPerSecond;
  json["dollars_per_hour"] = throughput.dollarsPerHour;
  json["dollars_per_million_tokens"] = throughput.dollarsPerMillionTokens;
  return json;
}

}  // namespace

std::string formatGroupSearch(const planner::GroupSearch& search,
                              const SearchReportContext& context) {
  const bool cost = search.options.objective == planner::Objective::kCost;
  std::string text = fmt::format(
      "autopar search: {} on {}: {} device group{}, global batch {}, objective {}\n\n",
      context.model, search.cluster, search.groups.size(), search.groups.size() == 1 ? "" : "s",
      context.globalBatch, cost ? "cost (dollars per million tokens)" : "fastest");
  if (search.devices) text += offeredText(search);
  text += planTable(planRows(search));
  for (const planner::GroupOutcome& outcome : search.groups) {
    if (!outcome.found && !search.devices) {
      text += fmt::format("\n{}: {}\n", outcome.group.name, outcome.unmet);
    }
  }
  if (search.groups.size() < 2) {
    text += "\none group: no plan across groups\n";
  } else if (!search.options.crossGroup) {
    text += "\nplans across groups not searched (--no-cross-group)\n";
  } else if (search.devices && search.shared.empty()) {
    text += "\nno plan across groups meets the constraints\n";
  } else if (search.shared.empty() && search.pipelines.empty()) {
    text +=
        "\nno plan across groups: none fits (sharing the batch needs two groups that each hold a "
        "replica; a pipeline, a stage's TP x DP devices dividing both groups)\n";
  }
  if (!search.chosen) return text;
  return text + chosenText(search, context);
}

nlohmann::ordered_json sharedPlanJson(const planner::GroupSearch& search,
                                      const planner::SharedPlan& plan) {
  nlohmann::ordered_json json = planHead(search, plan.throughput);
  json["cross_group_sync_time"] = plan.syncSeconds * 1e3;
  json["cross_group_link"] = plan.syncLink;
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
  // Each replica's samples, as `autopar plan --dp-shares` takes them: the plan `autopar check`
  // runs on CPU ranks to prove the shares compute what the unsharded model does. One sharding
  // runs them only where every group has the same TP, CP and PP.
  const planner::MegatronConfig& first = *plan.shares.front().found->best;
  nlohmann::ordered_json replicas = nlohmann::ordered_json::array();
  for (const planner::GroupOutcome& share : plan.shares) {
    const planner::MegatronConfig& best = *share.found->best;
    if (best.tp != first.tp || best.cp != first.cp || best.pp != first.pp) return json;
    for (int64_t r = 0; r < best.dp; ++r) replicas.push_back(share.samples / best.dp);
  }
  json["data_parallel_shares"] = std::move(replicas);
  return json;
}

nlohmann::ordered_json pipelinePlanJson(const planner::GroupSearch& search,
                                        const planner::SplitPipeline& pipeline) {
  const planner::MegatronConfig& config = pipeline.config;
  nlohmann::ordered_json json = planHead(search, pipeline.throughput);
  json["cross_group_link"] = pipeline.link;
  json["cross_group_send_time"] = pipeline.boundarySeconds * 1e3;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (size_t s = 0; s < pipeline.layers.size(); ++s) {
    const cluster::DeviceGroup& group = search.groups[pipeline.groupOf(s)].group;
    stages.push_back({{"group", group.name},
                      {"device", group.device},
                      {"layers", pipeline.layers[s]},
                      {"peak_memory_bytes", pipeline.peakBytes[s]}});
  }
  json["stages"] = std::move(stages);
  // Each block's stage, as `autopar plan --stage BLOCK=STAGE` takes them: the plan `autopar
  // check` runs on CPU ranks to prove the split computes what the unsharded model does.
  nlohmann::ordered_json blocks;
  blocks["embedding"] = 0;
  int64_t layer = 0;
  for (size_t s = 0; s < pipeline.layers.size(); ++s) {
    for (int64_t i = 0; i < pipeline.layers[s]; ++i)
      blocks[fmt::format("llm.layer.{}", layer++)] = s;
  }
  blocks["head"] = pipeline.layers.size() - 1;
  json["stage_blocks"] = std::move(blocks);
  ir::StageLayers llm{pipeline.layers, std::vector<int64_t>(pipeline.layers.size(), 0)};
  if (config.recompute == ir::Recompute::kFull) llm.recomputed = pipeline.layers;
  const ir::StageLayers vision{std::vector<int64_t>(pipeline.layers.size(), 0),
                               std::vector<int64_t>(pipeline.layers.size(), 0)};
  json["config"] = mindspeedOptimalConfig(config, llm, vision, pipeline.sequence,
                                          config.worldSize(), pipeline.step.stepSeconds);
  return json;
}

Expected<std::string> pipelineLaunchScript(const planner::GroupSearch& search,
                                           const planner::SplitPipeline& pipeline,
                                           const std::string& model) {
  const cluster::DeviceGroup& front = search.groups[pipeline.front].group;
  const cluster::DeviceGroup& back = search.groups[pipeline.back].group;
  if (front.devicesPerNode != back.devicesPerNode) {
    return Error{fmt::format(
        "--launch-script: {} has {} devices a node and {} {}; one torchrun job runs nodes of one "
        "size",
        front.name, front.devicesPerNode, back.name, back.devicesPerNode)};
  }
  auto transformer = planner::transformerOf(pipeline.config);
  if (!transformer) return transformer.error();
  plan::InputsRecord inputs;
  inputs.model = model;
  inputs.cluster = search.cluster;
  auto script = launchScript(pipeline.config, inputs, *transformer, pipeline.layers,
                             front.nodes + back.nodes, front.devicesPerNode);
  if (!script) return script.error().in("--launch-script");
  // Which node runs which kind: after the shebang line.
  const size_t firstLine = script->find('\n') + 1;
  script->insert(
      firstLine,
      fmt::format("# A pipeline across device groups: NODE_RANK 0-{} are {}'s {} nodes "
                  "({}, stages 0-{}), NODE_RANK {}-{} are {}'s {} nodes ({}, stages "
                  "{}-{}).\n",
                  front.nodes - 1, commentLine(front.name), front.nodes, commentLine(front.device),
                  pipeline.frontStages - 1, front.nodes, front.nodes + back.nodes - 1,
                  commentLine(back.name), back.nodes, commentLine(back.device),
                  pipeline.frontStages, pipeline.config.pp - 1));
  return *script;
}

}  // namespace autopar::exporters
