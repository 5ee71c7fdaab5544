/// The plan-feature flags of `autopar plan` (planner::TrainingFlags).

#include "cli/training_flags.h"

#include "cli/verbs.h"

namespace autopar::cli {

void addTrainingFlags(CLI::App& verb, planner::TrainingFlags& flags) {
  verb.add_option("--pipeline-stages", flags.pipelineStages,
                  "pipeline stages (MindSpore pipeline_stages); layers split evenly unless "
                  "--stage places blocks")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb.add_option("--micro-batches", flags.microBatches,
                  "micro-batches per step (MindSpore micro_size, MindFormers micro_batch_num)")
      ->check(positiveAtMost(limits::kMaxMicroBatches));
  verb.add_option("--schedule", flags.schedule,
                  "pipeline schedule: 1f1b | interleaved | gpipe | zb-h1")
      ->capture_default_str();
  verb.add_option("--virtual-stages", flags.virtualStages,
                  "model chunks per stage for the interleaved schedule (default 2)")
      ->check(positiveAtMost(limits::kMaxLayers));
  verb.add_option("--stage", flags.stages,
                  "BLOCK=STAGE: run a block on a stage (Cell.pipeline_stage)");
  verb.add_option("--chunk", flags.chunks,
                  "BLOCK=CHUNK: run a block as a stage's model chunk under the interleaved "
                  "schedule (MindSpore's pipeline segment; default 0)");
  verb.add_option("--recompute", flags.recompute,
                  "layer recompute: none | selective (attention core) | full (every layer)")
      ->capture_default_str();
  verb.add_option("--recompute-block", flags.recomputeBlocks, "recompute a block (Cell.recompute)");
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
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  verb.add_flag("--gradient-accumulation-shard", flags.gradientAccumulationShard,
                "shard accumulated gradients too (reduce-scatter every micro-batch)");
  verb.add_option("--comm-fusion", flags.fusion,
                  "BLOCK=ID: fuse the parameter collectives of blocks with the same id "
                  "(set_comm_fusion)");
  verb.add_option("--bucketing", flags.bucketing,
                  "automatic gradient buckets when no fusion ids are given: none | size | layer")
      ->capture_default_str();
  verb.add_option("--bucket-mb", flags.bucketMb, "bucket size for --bucketing size, MiB")
      ->check(positive())
      ->capture_default_str();
  verb.add_option(
      "--host-op", flags.hostOps,
      "run an op on the host with its parameters in host memory (primitive_target CPU)");
  verb.add_option(
      "--manual-split", flags.manualSplits,
      "OP=SIZES: non-uniform split of a Gather's table rows, e.g. embedding=10,20,30,4");
}

}  // namespace autopar::cli
