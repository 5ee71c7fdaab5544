#pragma once
/// \file
/// The plan features `autopar plan` takes on top of operator strategies (issue 4, seeds 001 and
/// 004): pipeline stages and schedule, recompute, optimizer parallel, communication fusion, host
/// placement and Gather's manual_split. Per-block and per-op flags are written into the graph
/// (ir::BlockSettings, ir::Op) before sharding; the global ones become cost::EvaluateOptions and a
/// sim::PipelineConfig.

#include <string>
#include <vector>

#include "cost/framework.h"
#include "cost/graph_cost.h"
#include "ir/graph.h"
#include "sim/step_estimate.h"
#include "util/expected.h"

namespace autopar::planner {

struct TrainingFlags {
  int pipelineStages = 1;
  int microBatches = 0;  ///< 0: one per step without pipelining, else required
  ir::Schedule schedule = ir::Schedule::k1F1B;
  int virtualStages = 0;  ///< 0: 2 for the interleaved schedule, else 1
  /// Per-block settings in order: stage, chunk (interleaved), communication fusion id and
  /// recompute (--stage, --chunk, --comm-fusion, --recompute-block; a layer placement's).
  std::vector<ir::BlockAssignment> blocks;
  ir::Recompute recompute = ir::Recompute::kNone;
  std::vector<std::string> recomputeOps;
  bool noMpCommRecompute = false;
  bool parallelOptimizerCommRecompute = false;
  bool recomputeSliceActivation = false;  ///< cost::RecomputeOptions::sliceActivation
  bool optimizerParallel = false;
  int64_t optimizerThresholdKb = 64;
  bool gradientAccumulationShard = false;
  /// Optimizer parallel's data-parallel-mode variant (whole parameters, sharded optimizer states:
  /// ZeRO-1); the data_parallel search mode implies it.
  bool groupUpdate = false;
  /// Shards a parameter no dim of which divides by its replicas by padding (Megatron-LM's
  /// distributed optimizer, DeepSpeed's ZeRO); set by `autopar estimate`, not a flag.
  bool padToShard = false;
  /// Set by `autopar estimate` from its Megatron-style options, not flags of their own:
  bool parallelOptimizerRegather = false;  ///< ZeRO-3 (cost::RecomputeOptions)
  bool distributedOptimizer = false;       ///< cost::OptimizerParallelOptions
  bool fp32Gradients = true;               ///< cost::OptimizerSpec
  cost::OptimizerState optimizerState = cost::OptimizerState::kFp32;  ///< cost::OptimizerSpec
  /// The framework's code path (cost/framework.h); its defaults price the plan's own features
  /// only.
  cost::CodePath codePath;
  /// MindSpore's micro_batch_interleave_num: the graph is one of this many copies of each
  /// micro-batch (cost::EvaluateOptions::copies), and one copy's model-parallel communication runs
  /// under another's compute (cost::EvaluateOptions::hidesActivationComm).
  int64_t interleavedCopies = 1;
  int fp8WeightCacheBytes = 0;  ///< cost::EvaluateOptions
  bool fp8Parameters = false;   ///< cost::EvaluateOptions
  /// Automatic gradient buckets where no block has a fusion id.
  cost::Bucketing bucketing = cost::Bucketing::kNone;
  double bucketMb = 25;
  std::vector<std::string> hostOps;
  /// Gather's manual_split: the op and its table's row counts (--manual-split OP=10,20,30,4).
  struct ManualSplit {
    std::string op;
    std::vector<int64_t> rows;
  };
  std::vector<ManualSplit> manualSplits;
};

/// Writes the per-block and per-op flags into `graph`. Errors name the flag and what is wrong.
Status applyTrainingFlags(const TrainingFlags& flags, ir::Graph& graph);

/// The pipeline the flags ask for. Fails when micro-batches are fewer than stages, the schedule
/// is unknown, or the devices do not split into the stages.
Expected<sim::PipelineConfig> pipelineConfig(const TrainingFlags& flags, int64_t numDevices);

/// Global options, priced with `costModel`; `groupUpdate` is optimizer parallel's
/// data-parallel-mode variant.
Expected<cost::EvaluateOptions> evaluateOptions(const TrainingFlags& flags, bool groupUpdate,
                                                const cost::CostModel& costModel);

}  // namespace autopar::planner
