#pragma once
/// \file
/// The plan features `autopar plan` takes beyond the training setup (ir::TrainingSetup: pipeline
/// stages, schedule, layer recompute, block placement, code path, optimizer state), as MindSpore
/// gives them (seeds 001 and 004): the micro-batch count, per-op recompute, optimizer parallel,
/// communication fusion, host placement and Gather's manual_split. Per-block and per-op settings
/// are written into the graph (ir::BlockSettings, ir::Op) before sharding; the global ones become
/// cost::EvaluateOptions and a sim::PipelineShape.

#include <string>
#include <vector>

#include "cost/framework.h"
#include "cost/graph_cost.h"
#include "ir/graph.h"
#include "ir/training_setup.h"
#include "sim/step_estimate.h"
#include "util/expected.h"

namespace autopar::planner {

struct TrainingFlags {
  /// Micro-batches per step, as MindSpore's micro_size gives them: the plan's graph holds one
  /// micro-batch, so the count is given, not derived from a global batch
  /// (ir::TrainingSetup::microBatches). 0: one per step without pipelining, else required.
  int microBatches = 0;
  /// A pipeline may run fewer micro-batches than stages, every stage idling through the rest of
  /// the fill (Megatron-LM's and DeepSpeed's 1F1B and GPipe run them); MindSpore requires
  /// micro_size >= stages, the default here.
  bool fewerMicroBatchesThanStages = false;
  /// Per data-parallel replica, in rank order, the samples it trains per step (--dp-shares 6,2;
  /// planner/data_parallel_shares.h); empty: the batch split evenly.
  std::vector<int64_t> dpShares;
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
  /// MindSpore's micro_batch_interleave_num: the graph is one of this many copies of each
  /// micro-batch (cost::EvaluateOptions::copies), and one copy's model-parallel communication runs
  /// under another's compute (cost::EvaluateOptions::hidesActivationComm).
  int64_t interleavedCopies = 1;
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

/// Writes the setup's block placement and the flags' per-op settings into `graph`. Errors name
/// the flag and what is wrong.
Status applyTrainingFlags(const ir::TrainingSetup& setup, const TrainingFlags& flags,
                          ir::Graph& graph);

/// Model chunks per stage: the setup's, and 2 for the interleaved schedule given 1 (MindSpore's
/// pp_interleave_num default).
int64_t chunksPerStage(const ir::TrainingSetup& setup);

/// The pipeline the setup and flags ask for; the interleaved schedule with one model chunk per
/// stage runs two (MindSpore's pp_interleave_num default). Fails when micro-batches are fewer
/// than stages, or the devices do not split into the stages.
Expected<sim::PipelineShape> pipelineConfig(const ir::TrainingSetup& setup,
                                            const TrainingFlags& flags, int64_t numDevices);

/// Global options, priced with `costModel`; `groupUpdate` is optimizer parallel's
/// data-parallel-mode variant.
Expected<cost::EvaluateOptions> evaluateOptions(const ir::TrainingSetup& setup,
                                                const TrainingFlags& flags, bool groupUpdate,
                                                const cost::CostModel& costModel);

}  // namespace autopar::planner
