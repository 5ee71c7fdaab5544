#include "planner/plan_assembly.h"

#include <fmt/format.h>

#include "cost/compute.h"
#include "frontend/graph_json.h"
#include "plan/plan_json.h"

namespace autopar::planner {

namespace {

plan::LayoutRecord layoutRecord(const ir::Graph& graph, ir::TensorId tensor,
                                const layout::TensorLayout& layout) {
  return plan::LayoutRecord{graph.tensor(tensor).name, layout.deviceMatrix.shape(), layout.dimAxes,
                            layout.tensorMap(), layout.partialAxes};
}

std::string sourceName(rules::StrategySource source) {
  switch (source) {
    case rules::StrategySource::kOverride:
      return "override";
    case rules::StrategySource::kAnnotation:
      return "annotation";
    case rules::StrategySource::kDefault:
      return "default";
    case rules::StrategySource::kSearch:
      return "search";
  }
  return "default";
}

plan::OpRecord opRecord(const ir::Graph& graph, const ir::Op& op,
                        const rules::GraphSharding& sharding, const cost::CostReport& report) {
  const rules::ShardedOp& shard = sharding.ops[op.id];
  plan::OpRecord record;
  record.name = op.name;
  record.kind = std::string(ir::opKindName(op.kind));
  record.block = op.block;
  record.strategy = sharding.strategies[op.id];
  record.strategySource = sourceName(sharding.sources[op.id]);
  record.deviceMatrix = shard.matrix.shape();
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    record.inputs.push_back(layoutRecord(graph, op.inputs[i], shard.inputs[i]));
  }
  for (size_t j = 0; j < op.outputs.size(); ++j) {
    record.outputs.push_back(layoutRecord(graph, op.outputs[j], shard.outputs[j]));
  }
  record.forwardSeconds = report.ops[op.id].forwardSeconds;
  record.backwardSeconds = report.ops[op.id].backwardSeconds;
  return record;
}

plan::RedistributionRecord redistributionRecord(const ir::Graph& graph,
                                                const cost::EdgeRedistribution& edge) {
  plan::RedistributionRecord record;
  record.tensor = graph.tensor(edge.tensor).name;
  record.fromOp = edge.producer == ir::kNoOp ? "" : graph.op(edge.producer).name;
  record.toOp = edge.consumer == ir::kNoOp ? "" : graph.op(edge.consumer).name;
  record.direction = edge.direction == cost::EdgeDirection::kForward ? "forward" : "backward";
  record.gradientSync = edge.isGradientSync;
  record.seconds = edge.redistribution.seconds;
  record.bytesPerDevice = edge.redistribution.bytesPerDevice;
  for (const auto& step : edge.redistribution.steps) {
    record.steps.push_back(plan::StepRecord{std::string(layout::primitiveName(step.kind)),
                                            step.matrix.shape(), step.axis, step.dim, step.splitDim,
                                            step.bytesPerDevice, step.seconds, step.algorithm});
  }
  return record;
}

/// The first and last block among a stage's ops, and how many ops it runs.
void describeStageOps(const ir::Graph& graph, const PlanContext& context, int stage,
                      plan::StageRecord& record) {
  for (const ir::Op& op : graph.ops()) {
    if (context.virtualStageOf[op.id] % context.pipeline.stages != stage) continue;
    ++record.ops;
    if (record.blocks.empty()) record.blocks = {op.block, op.block};
    record.blocks.back() = op.block;
  }
}

/// Samples and tokens per step, model FLOP/s per device and MFU. The graph holds one micro-batch
/// of every data-parallel replica; MFU is against the peak at the precision of the model's first
/// matmul.
void addThroughput(const LoadedModel& model, const PlanContext& context,
                   const cluster::Cluster& cluster, plan::EstimateRecord& estimate) {
  const ir::Graph& graph = model.graph;
  const double seconds = estimate.stepTimeSeconds;
  if (seconds <= 0) return;
  // The graph is one copy of a micro-batch (cost::EvaluateOptions::copies).
  const int64_t graphs = context.pipeline.microBatches * context.options.copies;
  const auto micro = static_cast<double>(graphs);
  estimate.samplesPerStep = model.graphBatch * graphs;
  if (model.sequence > 0) {
    estimate.tokensPerSecond =
        static_cast<double>(estimate.samplesPerStep * model.sequence) / seconds;
  }
  std::optional<cluster::Precision> precision;
  for (const ir::Op& op : graph.ops()) {
    if (ir::familyOf(op.kind) == ir::OpFamily::kMatMul) {
      precision = cost::precisionOf(graph, op);
      break;
    }
  }
  const double forward = forwardFlops(graph, {}).total;
  const double perDevice = 3 * forward * micro / seconds / static_cast<double>(cluster.numDevices);
  estimate.tflopsPerDevice = perDevice / 1e12;
  const double peak = cost::peakFlops(cluster.device, precision.value_or(cluster::Precision::kF32));
  if (peak > 0) estimate.mfu = perDevice / peak;
}

plan::EstimateRecord estimateRecord(const LoadedModel& model, const PlanContext& context,
                                    const cluster::Cluster& cluster) {
  const ir::Graph& graph = model.graph;
  const sim::StepEstimate& step = context.estimate;
  plan::EstimateRecord estimate;
  estimate.stepTimeSeconds = step.stepSeconds;
  estimate.computeSeconds = step.computeSeconds;
  estimate.communicationSeconds = step.exposedCommunicationSeconds;
  estimate.bubbleSeconds = step.bubbleSeconds;
  estimate.bubbleFraction = step.bubbleFraction;
  estimate.gradientSyncSeconds =
      step.stages[static_cast<size_t>(step.peakStage)].exposedGradientSyncSeconds;
  estimate.optimizerSeconds = step.optimizerSeconds;
  estimate.peakMemoryBytes = step.peakMemory().total();
  estimate.deviceMemoryBytes = cluster.device.memoryBytes;
  const MemoryBand band =
      stageBand(step.peakMemory(), context.options.codePath, *context.options.costModel);
  estimate.fits =
      fitsUnder(context.memoryPolicy, estimate.peakMemoryBytes, band, cluster.device.memoryBytes);
  estimate.memoryBandLowBytes = band.lowBytes;
  estimate.memoryBandHighBytes = band.highBytes;
  estimate.memoryVerdict = memoryVerdictName(band.against(cluster.device.memoryBytes));
  estimate.memory = step.peakMemory();
  addThroughput(model, context, cluster, estimate);
  for (size_t s = 0; s < step.stages.size(); ++s) {
    plan::StageRecord record{static_cast<int>(s), {}, 0, step.stages[s]};
    describeStageOps(graph, context, record.stage, record);
    estimate.memoryByDevice.insert(estimate.memoryByDevice.end(), context.devicesPerStage,
                                   record.estimate.memory.total());
    estimate.stages.push_back(std::move(record));
  }
  return estimate;
}

plan::FeaturesRecord featuresRecord(const cost::EvaluateOptions& options) {
  plan::FeaturesRecord features;
  features.optimizerParallel = options.optimizerParallel.enabled;
  features.optimizerThresholdKb = options.optimizerParallel.thresholdKb;
  features.gradientAccumulationShard = options.optimizerParallel.gradientAccumulationShard;
  features.optimizerGroupUpdate = options.optimizerParallel.groupUpdate;
  features.recompute = options.recompute.layers;
  features.mpCommRecompute = options.recompute.mpCommRecompute;
  features.parallelOptimizerCommRecompute = options.recompute.parallelOptimizerCommRecompute;
  features.recomputeSliceActivation = options.recompute.sliceActivation;
  features.bucketing = std::string(cost::bucketingName(options.fusion.bucketing));
  features.bucketBytes = options.fusion.bucketBytes;
  features.enableAllToAll = options.redistribution.enableAllToAll;
  return features;
}

void addParameterRecords(const ir::Graph& graph, const cost::CostReport& report,
                         plan::Plan& result) {
  for (const auto& placement : report.parameters) {
    result.parameters.push_back(plan::ParameterRecord{
        graph.tensor(placement.tensor).name, placement.optimizerShards, placement.shardDim,
        placement.onHost ? "host" : "device", placement.note});
  }
  for (const auto& group : report.fusionGroups) {
    plan::FusionGroupRecord record{group.name, group.stage, group.parameters, {}};
    for (const auto& c : group.collectives) {
      record.collectives.push_back({c.primitive, c.gradient, c.bytes, c.seconds, c.unfusedSeconds});
    }
    result.fusionGroups.push_back(std::move(record));
  }
}

}  // namespace

plan::StepRecord stepRecord(const layout::RedistStep& step) {
  return plan::StepRecord{std::string(layout::primitiveName(step.kind)),
                          step.matrix.shape(),
                          step.axis,
                          step.dim,
                          step.splitDim,
                          step.bytesPerDevice,
                          step.seconds,
                          step.algorithm};
}

std::string describeCluster(const cluster::Cluster& cluster) {
  std::string text =
      fmt::format("{}|{}|{}|{}|{}", cluster.name, cluster.device.name, cluster.numDevices,
                  cluster.device.memoryBytes, cluster.device.memoryBytesPerSecond);
  for (const auto& [precision, peak] : cluster.device.peakFlopsPerSecond) {
    text += fmt::format("|p{}={}", static_cast<int>(precision), peak);
  }
  for (const auto& level : cluster.levels) {
    text += fmt::format("|{}:{}:{}:{}", level.name, level.domainSize, level.bytesPerSecond,
                        level.latencySeconds);
  }
  return text;
}

plan::Plan assemblePlan(const LoadedModel& model, const rules::GraphSharding& sharding,
                        const cost::CostReport& report, const PlanContext& context,
                        const cluster::Cluster& cluster, const std::string& clusterName) {
  const ir::Graph& graph = model.graph;
  plan::Plan result;
  result.devices = cluster.numDevices;
  result.ranks = sharding.ops.front().matrix.ranks();
  std::sort(result.ranks.begin(), result.ranks.end());
  result.inputs =
      plan::InputsRecord{model.source,     plan::fingerprint(frontend::graphToJson(graph).dump()),
                         clusterName,      plan::fingerprint(describeCluster(cluster)),
                         model.microBatch, model.sequence};
  for (const ir::Op& op : graph.ops()) {
    plan::OpRecord record = opRecord(graph, op, sharding, report);
    const int virtualStage = context.virtualStageOf[op.id];
    record.stage = virtualStage % context.pipeline.stages;
    record.chunk = virtualStage / context.pipeline.stages;
    record.recomputed = report.recomputeRegionOf[op.id] >= 0;
    record.placement = op.placement == ir::Placement::kHost ? "host" : "device";
    record.manualSplit = op.attrs.manualSplit;
    result.ops.push_back(std::move(record));
  }
  for (const auto& edge : report.redistributions) {
    result.redistributions.push_back(redistributionRecord(graph, edge));
  }
  result.pipeline = context.pipeline;
  result.features = featuresRecord(context.options);
  addParameterRecords(graph, report, result);
  result.estimate = estimateRecord(model, context, cluster);
  return result;
}

namespace {

/// The ZeRO stage the plan's sharded optimizer amounts to, as configuration_estimate maps a
/// stage to the features: sharded states (1), and gradients (2); without the grouped update the
/// parameters stay sharded and are gathered for use (3).
int zeroStageOf(const plan::FeaturesRecord& features) {
  if (!features.optimizerParallel) return 0;
  if (!features.optimizerGroupUpdate) return 3;
  return features.gradientAccumulationShard ? 2 : 1;
}

}  // namespace

ir::TrainingSetup setupOf(const ir::ParallelConfig& degrees, int64_t microBatch,
                          const plan::Plan& plan, const PlanOptions& options) {
  ir::TrainingSetup setup = options.setup;
  static_cast<ir::ParallelConfig&>(setup) = degrees;
  setup.pp = plan.pipeline.stages;
  setup.vpp = plan.pipeline.virtualStages;
  setup.schedule = plan.pipeline.schedule;
  setup.mbs = std::max<int64_t>(microBatch, 1);
  setup.recompute = plan.features.recompute;
  setup.zero = zeroStageOf(plan.features);
  setup.gbs = setup.mbs * setup.dp * plan.pipeline.microBatches;
  setup.seq = plan.inputs.sequence;
  if (options.modelOptions.dtype)
    setup.precision = std::string(ir::dtypeName(*options.modelOptions.dtype));
  return setup;
}

plan::Plan planOf(const Evaluated& evaluated, const PlanOptions& options,
                  const cluster::Cluster& cluster) {
  const PlanContext context{
      evaluated.evaluateOptions, evaluated.pipeline, evaluated.stages.virtualStageOf,
      evaluated.estimate,        evaluated.report,   static_cast<size_t>(evaluated.devicesPerStage),
      options.setup.memoryPolicy};
  plan::Plan result = assemblePlan(evaluated.model, evaluated.outcome.sharding, evaluated.report,
                                   context, cluster, options.cluster);
  result.search = std::string(search::searchModeName(options.search));
  if (evaluated.model.parallel) {
    result.setup = setupOf(*evaluated.model.parallel, result.inputs.microBatch, result, options);
  }
  for (const auto& conflict : evaluated.outcome.conflicts) {
    result.conflicts.push_back(conflict.description);
  }
  return result;
}

}  // namespace autopar::planner
