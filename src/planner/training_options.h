#pragma once
/// \file
/// The plan features `autopar plan` takes on top of operator strategies (issue 4, seeds 001 and
/// 004): pipeline stages and schedule, recompute, optimizer parallel, communication fusion, host
/// placement and Gather's manual_split. Per-block and per-op flags are written into the graph
/// (ir::BlockSettings, ir::Op) before sharding; the global ones become cost::EvaluateOptions and a
/// sim::PipelineConfig.

#include <string>
#include <vector>

#include "cost/graph_cost.h"
#include "ir/graph.h"
#include "planner/framework.h"
#include "sim/step_estimate.h"
#include "util/expected.h"

namespace autopar::planner {

struct TrainingFlags {
  int pipelineStages = 1;
  int microBatches = 0;  ///< 0: one per step without pipelining, else required
  std::string schedule = "1f1b";
  int virtualStages = 0;            ///< 0: 2 for the interleaved schedule, else 1
  std::vector<std::string> stages;  ///< BLOCK=STAGE
  std::vector<std::string> chunks;  ///< BLOCK=CHUNK (interleaved)
  std::string recompute = "none";
  std::vector<std::string> recomputeBlocks;
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
  bool rootStaysGathered = false;          ///< cost::RecomputeOptions
  bool distributedOptimizer = false;       ///< cost::OptimizerParallelOptions
  bool fp32Gradients = true;               ///< cost::OptimizerSpec
  cost::OptimizerState optimizerState = cost::OptimizerState::kFp32;  ///< cost::OptimizerSpec
  bool overlapParameterGather = false;                                ///< cost::EvaluateOptions
  bool overlapActivationComm = false;                                 ///< cost::EvaluateOptions
  /// MindSpore's micro_batch_interleave_num: the graph is one of this many copies of each
  /// micro-batch (cost::EvaluateOptions::copies), and one copy's model-parallel communication runs
  /// under another's compute (overlapActivationComm).
  int64_t interleavedCopies = 1;
  bool overlapBackwardActivationComm = false;  ///< cost::EvaluateOptions
  bool overlapExpertExchange = false;          ///< cost::EvaluateOptions
  bool fuseElementwise = false;                ///< cost::EvaluateOptions
  bool unfusedGradientAccumulation = false;    ///< cost::EvaluateOptions
  bool inPlaceLossGradient = true;             ///< cost::EvaluateOptions
  bool stashGatheredInputs = true;             ///< cost::EvaluateOptions
  bool pipelineKeepsOutputs = false;           ///< cost::EvaluateOptions
  bool ringMergesInFp32 = false;               ///< cost::EvaluateOptions
  bool gradientSyncInPlace = false;            ///< cost::EvaluateOptions
  int fp8WeightCacheBytes = 0;                 ///< cost::EvaluateOptions
  bool fp8Parameters = false;                  ///< cost::EvaluateOptions
  bool selectiveOpPolicy = false;              ///< cost::RecomputeOptions
  bool listCollectives = false;     ///< layout::RedistributionOptions::perRankCopySeconds
  std::vector<std::string> fusion;  ///< BLOCK=ID
  std::string bucketing = "none";
  double bucketMb = 25;
  std::vector<std::string> hostOps;
  std::vector<std::string> manualSplits;  ///< OP=10,20,30,4
};

/// Writes the per-block and per-op flags into `graph`. Errors name the flag and what is wrong.
Status applyTrainingFlags(const TrainingFlags& flags, ir::Graph& graph);

/// The pipeline the flags ask for. Fails when micro-batches are fewer than stages, the schedule
/// is unknown, or the devices do not split into the stages.
Expected<sim::PipelineConfig> pipelineConfig(const TrainingFlags& flags, int64_t numDevices);

/// Global options; `groupUpdate` is optimizer parallel's data-parallel-mode variant.
Expected<cost::EvaluateOptions> evaluateOptions(const TrainingFlags& flags, bool groupUpdate);

/// Puts a framework's code path (planner/framework.h) into the flags: its overlaps, elementwise
/// fusion, gradient accumulation and list collectives. The attention kernel is the model's
/// (ModelOptions::attention) and the gradient buckets the caller's.
void applyCodePath(const CodePath& code, TrainingFlags& flags);

}  // namespace autopar::planner
