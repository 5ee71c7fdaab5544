#include "planner/training_options.h"

#include <fmt/format.h>

#include <charconv>

#include "cost/constants.h"
#include "ir/op_semantics.h"

namespace autopar::planner {

namespace {

struct Assignment {
  std::string name;
  std::string value;
};

Expected<Assignment> splitAssignment(const std::string& flag, const std::string& text,
                                     const std::string& example) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return Error{fmt::format("{} '{}': expected {}", flag, text, example)};
  }
  return Assignment{text.substr(0, eq), text.substr(eq + 1)};
}

Expected<int64_t> parseInteger(const std::string& flag, const std::string& text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return Error{fmt::format("{}: '{}' is not an integer", flag, text)};
  }
  return value;
}

Expected<ir::OpId> findOp(const ir::Graph& graph, const std::string& flag,
                          const std::string& name) {
  auto id = graph.findOp(name);
  if (!id)
    return Error{fmt::format("{} {}: graph '{}' has no op of this name", flag, name, graph.name())};
  return *id;
}

Status setBlock(ir::Graph& graph, const std::string& flag, const std::string& text,
                const std::string& example, void (*apply)(ir::BlockSettings&, int64_t)) {
  auto assignment = splitAssignment(flag, text, example);
  if (!assignment) return assignment.error();
  auto value = parseInteger(flag + " " + assignment->name, assignment->value);
  if (!value) return value.error();
  ir::BlockSettings settings;
  apply(settings, *value);
  auto status = graph.setBlockSettings(assignment->name, settings);
  if (!status) return status.error().in(flag);
  return {};
}

Status setManualSplit(ir::Graph& graph, const std::string& text) {
  const std::string flag = "--manual-split";
  auto assignment = splitAssignment(flag, text, "OP=SIZES, e.g. embedding=10,20,30,4");
  if (!assignment) return assignment.error();
  auto id = findOp(graph, flag, assignment->name);
  if (!id) return id.error();
  ir::Op& op = graph.mutableOp(*id);
  if (op.kind != ir::OpKind::kGather) {
    return Error{fmt::format("{} {}: manual_split applies to Gather, not {}", flag, op.name,
                             ir::opKindName(op.kind))};
  }
  std::vector<int64_t> parts;
  size_t start = 0;
  while (start <= assignment->value.size()) {
    const auto comma = std::min(assignment->value.find(',', start), assignment->value.size());
    auto part = parseInteger(flag + " " + op.name, assignment->value.substr(start, comma - start));
    if (!part) return part.error();
    parts.push_back(*part);
    start = comma + 1;
  }
  ir::OpAttrs attrs = op.attrs;
  attrs.manualSplit = parts;
  auto inferred = ir::inferOutputTypes(op.kind, attrs, graph.inputTypes(op));
  if (!inferred) return inferred.error().in(fmt::format("{} {}", flag, op.name));
  op.attrs = std::move(attrs);
  return {};
}

}  // namespace

Status applyTrainingFlags(const TrainingFlags& flags, ir::Graph& graph) {
  for (const auto& text : flags.stages) {
    auto status =
        setBlock(graph, "--stage", text, "BLOCK=STAGE, e.g. llm.layer.3=1",
                 [](ir::BlockSettings& s, int64_t v) { s.pipelineStage = static_cast<int>(v); });
    if (!status) return status;
  }
  for (const auto& text : flags.chunks) {
    auto status =
        setBlock(graph, "--chunk", text, "BLOCK=CHUNK, e.g. llm.layer.3=1",
                 [](ir::BlockSettings& s, int64_t v) { s.pipelineSegment = static_cast<int>(v); });
    if (!status) return status;
  }
  for (const auto& text : flags.fusion) {
    auto status =
        setBlock(graph, "--comm-fusion", text, "BLOCK=ID, e.g. layer1=0",
                 [](ir::BlockSettings& s, int64_t v) { s.commFusion = static_cast<int>(v); });
    if (!status) return status;
  }
  for (const auto& block : flags.recomputeBlocks) {
    ir::BlockSettings settings;
    settings.recompute = true;
    if (auto status = graph.setBlockSettings(block, settings); !status) {
      return status.error().in("--recompute-block");
    }
  }
  for (const auto& name : flags.recomputeOps) {
    auto id = findOp(graph, "--recompute-op", name);
    if (!id) return id.error();
    graph.mutableOp(*id).recompute = true;
  }
  for (const auto& name : flags.hostOps) {
    auto id = findOp(graph, "--host-op", name);
    if (!id) return id.error();
    graph.mutableOp(*id).placement = ir::Placement::kHost;
  }
  for (const auto& text : flags.manualSplits) {
    if (auto status = setManualSplit(graph, text); !status) return status;
  }
  return {};
}

Expected<sim::PipelineConfig> pipelineConfig(const TrainingFlags& flags, int64_t numDevices) {
  sim::PipelineConfig config;
  auto schedule = ir::parseSchedule(flags.schedule);
  if (!schedule) return schedule.error().in("--schedule");
  config.schedule = *schedule;
  config.stages = flags.pipelineStages;
  config.virtualStages = flags.virtualStages > 0                        ? flags.virtualStages
                         : *schedule == sim::ScheduleKind::kInterleaved ? 2
                                                                        : 1;
  config.microBatches = flags.microBatches > 0 ? flags.microBatches : 1;
  if (numDevices % config.stages != 0) {
    return Error{
        fmt::format("--pipeline-stages {}: the {} devices do not split into {} equal "
                    "stages",
                    config.stages, numDevices, config.stages)};
  }
  if (config.stages > 1 && config.microBatches < config.stages) {
    return Error{
        fmt::format("--micro-batches {}: fewer than the {} pipeline stages; a pipeline "
                    "needs at least one micro-batch per stage (micro_size >= stages)",
                    config.microBatches, config.stages)};
  }
  if (auto status = sim::validateShape(
          {config.stages, config.microBatches, config.virtualStages, config.schedule});
      !status) {
    return status.error();
  }
  return config;
}

Expected<cost::EvaluateOptions> evaluateOptions(const TrainingFlags& flags, bool groupUpdate,
                                                const cost::CostModel& costModel) {
  cost::EvaluateOptions options;
  options.costModel = costModel;
  auto recompute = cost::parseLayerRecompute(flags.recompute);
  if (!recompute) return recompute.error().in("--recompute");
  options.recompute.layers = *recompute;
  options.recompute.mpCommRecompute = !flags.noMpCommRecompute;
  options.recompute.parallelOptimizerCommRecompute = flags.parallelOptimizerCommRecompute;
  options.recompute.sliceActivation = flags.recomputeSliceActivation;
  options.recompute.parallelOptimizerRegather = flags.parallelOptimizerRegather;
  options.recompute.rootStaysGathered = flags.codePath.fsdpRootStaysGathered;
  options.optimizerParallel.enabled = flags.optimizerParallel;
  options.optimizerParallel.thresholdKb = flags.optimizerThresholdKb;
  options.optimizerParallel.gradientAccumulationShard = flags.gradientAccumulationShard;
  options.optimizerParallel.groupUpdate = groupUpdate;
  options.optimizerParallel.padToShard = flags.padToShard;
  options.optimizerParallel.distributedOptimizer = flags.distributedOptimizer;
  options.optimizer.fp32Gradients = flags.fp32Gradients;
  options.optimizer.state = flags.optimizerState;
  options.codePath = flags.codePath;
  options.copies = flags.interleavedCopies;
  options.fp8WeightCacheBytes = flags.fp8WeightCacheBytes;
  options.fp8Parameters = flags.fp8Parameters;
  options.recompute.selectiveOpPolicy = flags.codePath.selectiveOpPolicy;
  // Under PyTorch, fused elementwise chains are torch.compile's (docs/frameworks.md), whose
  // partitioner also decides what the per-op policy saves.
  options.recompute.policyKeepsOnlyRead = flags.codePath.fusedElementwise;
  if (flags.codePath.listCollectives) {
    options.redistribution.perRankCopySeconds = costModel->listCollectiveCopySeconds;
  }
  auto bucketing = cost::parseBucketing(flags.bucketing);
  if (!bucketing) return bucketing.error().in("--bucketing");
  options.fusion.bucketing = *bucketing;
  options.fusion.bucketBytes = static_cast<int64_t>(flags.bucketMb * 1024 * 1024);
  return options;
}

}  // namespace autopar::planner
