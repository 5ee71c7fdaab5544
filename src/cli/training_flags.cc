/// The plan-feature flags of `autopar plan` (planner::TrainingFlags).

#include "cli/training_flags.h"

#include <fmt/format.h>

#include <charconv>

#include "cli/verbs.h"

namespace autopar::cli {

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

/// Each BLOCK=VALUE of `texts` as an assignment that `apply` makes of the value.
Status addBlocks(const std::vector<std::string>& texts, const std::string& flag,
                 const std::string& example, void (*apply)(ir::BlockSettings&, int),
                 std::vector<ir::BlockAssignment>& out) {
  for (const std::string& text : texts) {
    auto assignment = splitAssignment(flag, text, example);
    if (!assignment) return assignment.error();
    auto value = parseInteger(flag + " " + assignment->name, assignment->value);
    if (!value) return value.error();
    ir::BlockAssignment block{assignment->name, {}};
    apply(block.settings, static_cast<int>(*value));
    out.push_back(std::move(block));
  }
  return {};
}

Expected<planner::TrainingFlags::ManualSplit> parseManualSplit(const std::string& text) {
  const std::string flag = "--manual-split";
  auto assignment = splitAssignment(flag, text, "OP=SIZES, e.g. embedding=10,20,30,4");
  if (!assignment) return assignment.error();
  planner::TrainingFlags::ManualSplit split{assignment->name, {}};
  for (size_t start = 0; start <= assignment->value.size();) {
    const auto comma = std::min(assignment->value.find(',', start), assignment->value.size());
    auto part = parseInteger(flag + " " + split.op, assignment->value.substr(start, comma - start));
    if (!part) return part.error();
    split.rows.push_back(*part);
    start = comma + 1;
  }
  return split;
}

}  // namespace

void addTrainingFlags(CLI::App& verb, ir::TrainingSetup& setup, planner::TrainingFlags& flags,
                      TrainingFlagText& text) {
  verb.add_option("--pipeline-stages", setup.pp,
                  "pipeline stages (MindSpore pipeline_stages); layers split evenly unless "
                  "--stage places blocks")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb.add_option("--micro-batches", flags.microBatches,
                  "micro-batches per step (MindSpore micro_size, MindFormers micro_batch_num)")
      ->check(positiveAtMost(limits::kMaxMicroBatches));
  verb.add_option("--dp-shares", flags.dpShares,
                  "N,N,...: each data-parallel replica's samples a step, in rank order, where a "
                  "faster kind of device trains more (with --tp; priced at the largest share)")
      ->delimiter(',')
      ->check(positiveAtMost(limits::kMaxGlobalBatch));
  verb.add_option("--schedule", text.schedule,
                  "pipeline schedule: 1f1b | interleaved | gpipe | zb-h1")
      ->capture_default_str();
  verb.add_option("--virtual-stages", text.virtualStages,
                  "model chunks per stage for the interleaved schedule (default 2)")
      ->check(positiveAtMost(limits::kMaxLayers));
  verb.add_option("--stage", text.stages,
                  "BLOCK=STAGE: run a block on a stage (Cell.pipeline_stage)");
  verb.add_option("--chunk", text.chunks,
                  "BLOCK=CHUNK: run a block as a stage's model chunk under the interleaved "
                  "schedule (MindSpore's pipeline segment; default 0)");
  verb.add_option("--recompute", text.recompute,
                  "layer recompute: none | selective (attention core) | full (every layer)")
      ->capture_default_str();
  verb.add_option("--recompute-block", text.recomputeBlocks, "recompute a block (Cell.recompute)");
  verb.add_option("--recompute-op", flags.recomputeOps, "recompute one op (primitive recompute)");
  verb.add_flag("--no-mp-comm-recompute", flags.noMpCommRecompute,
                "keep model-parallel communication outputs of recomputed blocks");
  verb.add_flag("--parallel-optimizer-comm-recompute", flags.parallelOptimizerCommRecompute,
                "gather optimizer-parallel parameters again in recomputed blocks");
  verb.add_flag("--recompute-slice-activation", flags.recomputeSliceActivation,
                "keep a recomputed block's inputs sliced over the devices that hold the same "
                "copy, gathered again in backward (recompute_slice_activation)");
  verb.add_flag("--optimizer-parallel", flags.optimizerParallel,
                "shard parameters and optimizer states over their replicas "
                "(enable_parallel_optimizer)");
  verb.add_option("--optimizer-threshold", flags.optimizerThresholdKb,
                  "parallel_optimizer_threshold in KB: smaller parameter slices stay whole")
      ->check(finiteIn(0, 1e12))
      ->capture_default_str();
  verb.add_flag("--gradient-accumulation-shard", flags.gradientAccumulationShard,
                "shard accumulated gradients too (reduce-scatter every micro-batch)");
  verb.add_option("--comm-fusion", text.fusion,
                  "BLOCK=ID: fuse the parameter collectives of blocks with the same id "
                  "(set_comm_fusion)");
  verb.add_option("--bucketing", text.bucketing,
                  "automatic gradient buckets when no fusion ids are given: none | size | layer")
      ->capture_default_str();
  verb.add_option("--bucket-mb", flags.bucketMb, "bucket size for --bucketing size, MiB")
      ->check(finiteIn(1e-3, 1 << 20))
      ->capture_default_str();
  verb.add_option(
      "--host-op", flags.hostOps,
      "run an op on the host with its parameters in host memory (primitive_target CPU)");
  verb.add_option(
      "--manual-split", text.manualSplits,
      "OP=SIZES: non-uniform split of a Gather's table rows, e.g. embedding=10,20,30,4");
}

Status applyTrainingFlagText(const TrainingFlagText& text, ir::TrainingSetup& setup,
                             planner::TrainingFlags& flags) {
  auto recompute = ir::parseRecompute(text.recompute);
  if (!recompute) {
    return Error{
        fmt::format("--recompute: '{}': expected none, selective or full", text.recompute)};
  }
  setup.recompute = *recompute;
  auto schedule = ir::parseSchedule(text.schedule);
  if (!schedule) return schedule.error().in("--schedule");
  setup.schedule = *schedule;
  if (text.virtualStages > 0) {
    if (setup.schedule == ir::Schedule::kInterleaved && text.virtualStages < 2) {
      return Error{fmt::format(
          "--virtual-stages {}: the interleaved schedule needs at least 2 model chunks per stage",
          text.virtualStages)};
    }
    setup.vpp = text.virtualStages;
  }
  auto bucketing = cost::parseBucketing(text.bucketing);
  if (!bucketing) return bucketing.error().in("--bucketing");
  flags.bucketing = *bucketing;
  std::vector<ir::BlockAssignment>& out = setup.placement;
  if (auto status = addBlocks(
          text.stages, "--stage", "BLOCK=STAGE, e.g. llm.layer.3=1",
          [](ir::BlockSettings& s, int v) { s.pipelineStage = v; }, out);
      !status) {
    return status;
  }
  if (auto status = addBlocks(
          text.chunks, "--chunk", "BLOCK=CHUNK, e.g. llm.layer.3=1",
          [](ir::BlockSettings& s, int v) { s.pipelineSegment = v; }, out);
      !status) {
    return status;
  }
  if (auto status = addBlocks(
          text.fusion, "--comm-fusion", "BLOCK=ID, e.g. layer1=0",
          [](ir::BlockSettings& s, int v) { s.commFusion = v; }, out);
      !status) {
    return status;
  }
  for (const std::string& block : text.recomputeBlocks) {
    ir::BlockSettings settings;
    settings.recompute = true;
    out.push_back({block, settings});
  }
  for (const std::string& given : text.manualSplits) {
    auto split = parseManualSplit(given);
    if (!split) return split.error();
    flags.manualSplits.push_back(std::move(*split));
  }
  return {};
}

}  // namespace autopar::cli
