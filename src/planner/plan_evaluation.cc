#include "planner/plan_evaluation.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "frontend/mindspore_strategy.h"
#include "ir/setting.h"
#include "rules/graph_sharding.h"

namespace autopar::planner {

namespace {

/// Adds the input strategies of MindSpore's operator-strategy file (frontend/mindspore_strategy.h)
/// to `overrides`, where --shard has not set the op. Every op must be in the graph, on the stage
/// the file says (the plan's pipeline options place the blocks; the file cannot move them).
Status addStrategyFile(const std::string& path, const ir::Graph& graph,
                       const search::StageAssignment& stages,
                       std::map<std::string, layout::Strategy>& overrides) {
  auto entries = frontend::readOpStrategyFile(path);
  const std::string flag = ir::flag(Setting::kStrategyFile);
  if (!entries) return entries.error().in(flag);
  for (frontend::OpStrategyEntry& entry : *entries) {
    const std::string field =
        fmt::format("{}: {}: parallel_strategy_item.{}", flag, path, entry.op);
    const std::optional<ir::OpId> op = graph.findOp(entry.op);
    if (!op) return Error{fmt::format("{}: no op of that name in graph '{}'", field, graph.name())};
    if (stages.stageOf(*op) != entry.stage) {
      return Error{
          fmt::format("{}.stage: {}, but the plan's pipeline options put the op on stage "
                      "{}",
                      field, entry.stage, stages.stageOf(*op))};
    }
    overrides.try_emplace(entry.op, std::move(entry.strategy));
  }
  return {};
}

/// Every op sharded with its block's cuts (planner/op_search.h) over the stage's ranks.
Expected<search::SearchOutcome> shardByBlocks(const BlockSharding& blocks, const ir::Graph& graph,
                                              const std::vector<int>& ranks) {
  const auto dataParallel = static_cast<int64_t>(ranks.size()) / blocks.submeshDevices;
  auto cuts = liftBlockSharding(blocks, graph, dataParallel);
  if (!cuts) return cuts.error();
  const std::vector<rules::StrategySource> sources(cuts->size(), rules::StrategySource::kSearch);
  auto sharding = rules::shardGraphWithCuts(graph, ranks, *cuts, sources);
  if (!sharding) return sharding.error();
  return search::SearchOutcome{std::move(*sharding), blocks.explanation, {}};
}

}  // namespace

namespace {

/// The options with the named framework's code path in force, and Megatron-Core's
/// 40M-element gradient buckets where it overlaps the gradient reduce and no bucketing was asked
/// for. The attention kernel is the model's: evaluate() builds it with the profile's.
PlanOptions withFramework(PlanOptions options) {
  if (!options.frameworkNamed) return options;
  options.setup.codePath =
      cost::releaseCodePath(options.setup.framework, options.setup.frameworkRelease);
  const cost::CodePath& code = options.setup.codePath;
  TrainingFlags& training = options.training;
  const std::vector<ir::BlockAssignment>& blocks = options.setup.placement;
  const bool fusionIds = std::any_of(
      blocks.begin(), blocks.end(),
      [](const ir::BlockAssignment& block) { return block.settings.commFusion.has_value(); });
  if (code.overlapGradReduce && training.bucketing == cost::Bucketing::kNone && !fusionIds) {
    training.bucketing = cost::Bucketing::kBySize;
    training.bucketMb = 40e6 * 4 / (1024.0 * 1024.0);  // 40M fp32 elements
  }
  return options;
}

/// Whether the named framework runs the plan's degrees, schedule and precision.
Status checkPlanRunnable(const PlanOptions& options, const ModelOptions& model) {
  if (!options.frameworkNamed) return {};
  ir::ParallelConfig config = model.parallel.value_or(ir::ParallelConfig{});
  config.pp = options.setup.pp;
  config.schedule = options.setup.schedule;
  if (config.schedule == ir::Schedule::kInterleaved) config.vpp = chunksPerStage(options.setup);
  const std::string precision(model.dtype ? ir::dtypeName(*model.dtype) : "bf16");
  return cost::checkRunnable(cost::frameworkProfile(options.setup.framework), config, precision,
                             options.setup.frameworkRelease);
}

}  // namespace

Expected<LoadedModel> loadPlannedModel(const PlanOptions& given, const cluster::Cluster& cluster,
                                       const ModelOptions& givenModel) {
  const PlanOptions options = withFramework(given);
  if (auto runnable = checkPlanRunnable(options, givenModel); !runnable) return runnable.error();
  ModelOptions modelOptions = givenModel;
  if (options.frameworkNamed && !modelOptions.attention) {
    modelOptions.attention = options.setup.codePath.attention;
  }
  auto pipeline = pipelineConfig(options.setup, options.training, cluster.numDevices);
  if (!pipeline) return pipeline.error();
  return loadModel(options.model, modelOptions, cluster.numDevices / pipeline->stages);
}

Expected<Evaluated> evaluate(const PlanOptions& options, const cluster::Cluster& cluster,
                             const ModelOptions& modelOptions) {
  auto model = loadPlannedModel(options, cluster, modelOptions);
  if (!model) return model.error();
  return evaluateModel(std::move(*model), options, cluster);
}

Expected<Evaluated> evaluateModel(LoadedModel loaded, const PlanOptions& given,
                                  const cluster::Cluster& cluster) {
  const PlanOptions options = withFramework(given);
  auto pipeline = pipelineConfig(options.setup, options.training, cluster.numDevices);
  if (!pipeline) return pipeline.error();
  const int64_t devicesPerStage = cluster.numDevices / pipeline->stages;
  if (auto status = applyTrainingFlags(options.setup, options.training, loaded.graph); !status) {
    return status.error();
  }
  auto stages = search::assignStages(loaded.graph, pipeline->stages, pipeline->virtualStages);
  if (!stages) return stages.error();
  search::SearchRequest request;
  request.mode = options.search;
  std::map<std::string, layout::Strategy> overrides = options.shards;
  if (!options.strategyFile.empty()) {
    auto added = addStrategyFile(options.strategyFile, loaded.graph, *stages, overrides);
    if (!added) return added.error();
  }
  request.overrides = std::move(overrides);
  request.explain = options.explain;
  request.memCoeff = options.memCoeff;
  request.enableAllToAll = options.enableAllToAll;
  request.memoryLimitBytes = cluster.device.memoryBytes;
  request.timeLimitSeconds = options.ilpTimeLimit;
  request.tieLayers = options.ilpTieLayers;
  request.costModel = options.costModel;
  std::vector<int> ranks(static_cast<size_t>(devicesPerStage));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto outcome = options.blockSharding
                     ? shardByBlocks(*options.blockSharding, loaded.graph, ranks)
                     : search::searchStrategies(loaded.graph, ranks, cluster, request);
  if (!outcome) return outcome.error();
  auto evaluateOptions = planner::evaluateOptions(
      options.setup, options.training,
      options.training.groupUpdate || request.mode == search::SearchMode::kDataParallel,
      options.costModel);
  if (!evaluateOptions) return evaluateOptions.error();
  evaluateOptions->redistribution.enableAllToAll = options.enableAllToAll;
  evaluateOptions->optimizerParallel.accumulates = pipeline->microBatches > 1;
  evaluateOptions->stageOfOp = stages->virtualStageOf;
  evaluateOptions->stages = pipeline->stages * pipeline->virtualStages;
  evaluateOptions->physicalStages = pipeline->stages;
  evaluateOptions->rankStride = static_cast<int>(devicesPerStage);
  auto report = cost::evaluateGraph(loaded.graph, outcome->sharding.ops, cluster, *evaluateOptions);
  if (!report) return report.error();
  auto estimate = sim::estimateStep(*report, *pipeline);
  if (!estimate) return estimate.error();
  return Evaluated{
      std::move(loaded),  std::move(*outcome), std::move(*evaluateOptions), *pipeline,
      std::move(*stages), std::move(*report),  std::move(*estimate),        devicesPerStage};
}

ForwardFlops forwardFlops(const ir::Graph& graph, const std::vector<int>& recomputeRegionOf) {
  ForwardFlops flops;
  for (const ir::Op& op : graph.ops()) {
    const double forward = graph.forwardFlops(op);
    flops.total += forward;
    const auto id = static_cast<size_t>(op.id);
    if (id < recomputeRegionOf.size() && recomputeRegionOf[id] >= 0) flops.recomputed += forward;
  }
  return flops;
}

/// The plan features a run yaml sets (seed 001's and 004's keys as MindFormers spells them).
}  // namespace autopar::planner
