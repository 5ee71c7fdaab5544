#include "planner/training_options.h"

#include <fmt/format.h>

#include "cost/constants.h"
#include "ir/op_semantics.h"
#include "ir/setting.h"

namespace autopar::planner {

namespace {

using ir::flag;
using Setting = ir::Setting;

Expected<ir::OpId> findOp(const ir::Graph& graph, Setting setting, const std::string& name) {
  auto id = graph.findOp(name);
  if (!id) {
    return Error{
        fmt::format("{}: graph '{}' has no op of this name", flag(setting, name), graph.name())};
  }
  return *id;
}

/// The setting that gives a block assignment, for its errors.
Setting settingOf(const ir::BlockSettings& settings) {
  if (settings.pipelineStage) return Setting::kStage;
  if (settings.pipelineSegment) return Setting::kChunk;
  if (settings.commFusion) return Setting::kCommFusion;
  return Setting::kRecomputeBlock;
}

Status setManualSplit(ir::Graph& graph, const TrainingFlags::ManualSplit& split) {
  auto id = findOp(graph, Setting::kManualSplit, split.op);
  if (!id) return id.error();
  ir::Op& op = graph.mutableOp(*id);
  const std::string given = flag(Setting::kManualSplit, op.name);
  if (op.kind != ir::OpKind::kGather) {
    return Error{
        fmt::format("{}: manual_split applies to Gather, not {}", given, ir::opKindName(op.kind))};
  }
  ir::OpAttrs attrs = op.attrs;
  attrs.manualSplit = split.rows;
  auto inferred = ir::inferOutputTypes(op.kind, attrs, graph.inputTypes(op));
  if (!inferred) return inferred.error().in(given);
  op.attrs = std::move(attrs);
  return {};
}

}  // namespace

Status applyTrainingFlags(const ir::TrainingSetup& setup, const TrainingFlags& flags,
                          ir::Graph& graph) {
  for (const ir::BlockAssignment& block : setup.placement) {
    if (auto status = graph.setBlockSettings(block.scope, block.settings); !status) {
      return status.error().in(flag(settingOf(block.settings)));
    }
  }
  for (const auto& name : flags.recomputeOps) {
    auto id = findOp(graph, Setting::kRecomputeOp, name);
    if (!id) return id.error();
    graph.mutableOp(*id).recompute = true;
  }
  for (const auto& name : flags.hostOps) {
    auto id = findOp(graph, Setting::kHostOp, name);
    if (!id) return id.error();
    graph.mutableOp(*id).placement = ir::Placement::kHost;
  }
  for (const auto& split : flags.manualSplits) {
    if (auto status = setManualSplit(graph, split); !status) return status;
  }
  return {};
}

int64_t chunksPerStage(const ir::TrainingSetup& setup) {
  return setup.schedule == ir::Schedule::kInterleaved && setup.vpp == 1 ? 2 : setup.vpp;
}

Expected<sim::PipelineShape> pipelineConfig(const ir::TrainingSetup& setup,
                                            const TrainingFlags& flags, int64_t numDevices) {
  sim::PipelineShape config;
  config.schedule = setup.schedule;
  config.stages = static_cast<int>(setup.pp);
  config.virtualStages = static_cast<int>(chunksPerStage(setup));
  config.microBatches = flags.microBatches > 0 ? flags.microBatches : 1;
  if (numDevices % config.stages != 0) {
    return Error{fmt::format("{}: the {} devices do not split into {} equal stages",
                             flag(Setting::kPipelineStages, config.stages), numDevices,
                             config.stages)};
  }
  if (config.stages > 1 && config.microBatches < config.stages &&
      !flags.fewerMicroBatchesThanStages) {
    return Error{
        fmt::format("{}: fewer than the {} pipeline stages; a pipeline "
                    "needs at least one micro-batch per stage (micro_size >= stages)",
                    flag(Setting::kMicroBatches, config.microBatches), config.stages)};
  }
  if (auto status = sim::validateShape(config); !status) {
    return status.error();
  }
  return config;
}

Expected<cost::EvaluateOptions> evaluateOptions(const ir::TrainingSetup& setup,
                                                const TrainingFlags& flags, bool groupUpdate,
                                                const cost::CostModel& costModel) {
  cost::EvaluateOptions options;
  options.costModel = costModel;
  options.recompute.layers = setup.recompute;
  options.recompute.mpCommRecompute = !flags.noMpCommRecompute;
  options.recompute.parallelOptimizerCommRecompute = flags.parallelOptimizerCommRecompute;
  options.recompute.sliceActivation = flags.recomputeSliceActivation;
  options.recompute.rootStaysGathered = setup.codePath.fsdpRootStaysGathered;
  options.optimizerParallel.enabled = flags.optimizerParallel;
  options.optimizerParallel.thresholdKb = flags.optimizerThresholdKb;
  options.optimizerParallel.gradientAccumulationShard = flags.gradientAccumulationShard;
  options.optimizerParallel.groupUpdate = groupUpdate;
  // A ZeRO stage (the estimate's setups; a graph plan's optimizer parallel has none) adds what
  // Megatron's distributed optimizer and FSDP do beyond MindSpore's features: both flatten the
  // parameters and cut them in equal, padded parts, and ZeRO-3 gathers a parameter anew for
  // forward, a recomputed forward and backward.
  const int zero = setup.zeroAsRun();
  // Under MindSpore a ZeRO stage is its own optimizer parallel, which adds neither.
  const bool flattened = !cost::frameworkProfile(setup.framework).can.zeroAsOptimizerParallel;
  options.optimizerParallel.padToShard = zero > 0 && flattened;
  options.optimizerParallel.distributedOptimizer = (zero == 1 || zero == 2) && flattened;
  options.recompute.parallelOptimizerRegather = zero == 3;
  options.optimizerParallel.gradientsAllReduced = setup.zeroAllReducesGradients();
  options.optimizer = cost::optimizerSpecOf(setup);
  options.codePath = setup.codePath;
  options.copies = flags.interleavedCopies;
  // Transformer Engine's cache holds the fp8 weight and its transpose (2 bytes an element); fp8
  // parameters are those two bytes themselves, in place of the bf16 weight.
  options.fp8WeightCacheBytes =
      setup.precision == "fp8" && setup.codePath.fp8WeightCache && !setup.fp8ParamGather ? 2 : 0;
  options.fp8Parameters = setup.fp8ParamGather;
  options.recompute.selectiveOpPolicy = setup.codePath.selectiveOpPolicy;
  // Under PyTorch, fused elementwise chains are torch.compile's (docs/frameworks.md), whose
  // partitioner also decides what the per-op policy saves.
  options.recompute.policyKeepsOnlyRead = setup.codePath.fusedElementwise;
  if (setup.codePath.listCollectives) {
    options.redistribution.perRankCopySeconds = costModel->listCollectiveCopySeconds;
  }
  options.fusion.bucketing = flags.bucketing;
  options.fusion.bucketBytes = static_cast<int64_t>(flags.bucketMb * 1024 * 1024);
  return options;
}

}  // namespace autopar::planner
