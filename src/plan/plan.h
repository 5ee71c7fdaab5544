#pragma once
/// \file
/// The Plan value: how every op is sharded, the redistributions inserted on edges, the estimate,
/// and the inputs it was made from. Serialised as versioned JSON (docs/plan-format.md).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/op.h"
#include "ir/parallel_config.h"
#include "ir/stage_estimate.h"
#include "ir/training_setup.h"
#include "layout/strategy.h"

namespace autopar::plan {

inline constexpr int kPlanFormatVersion = 1;

/// A tensor layout as recorded in a plan.
struct LayoutRecord {
  std::string tensor;
  std::vector<int64_t> deviceMatrix;
  std::vector<std::vector<int>> dimAxes;  ///< per dim, device-matrix axes (0 = outermost)
  std::vector<int64_t> tensorMap;         ///< the seeds' right-to-left tensor map
  std::vector<int> partialAxes;
};

struct OpRecord {
  std::string name;
  std::string kind;
  std::string block;
  layout::Strategy strategy;
  std::string strategySource;  ///< "override", "annotation", "default", or a search's name
  std::vector<int64_t> deviceMatrix;
  std::vector<LayoutRecord> inputs;
  std::vector<LayoutRecord> outputs;
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  int stage = 0;  ///< pipeline stage
  int chunk = 0;  ///< model chunk on its stage (interleaved schedule)
  bool recomputed = false;
  std::string placement = "device";  ///< or "host"
  std::vector<int64_t> manualSplit;  ///< Gather's non-uniform table split
};

struct StepRecord {
  std::string primitive;  ///< "all_gather", "split", ...
  std::vector<int64_t> deviceMatrix;
  int axis = 0;
  int dim = -1;
  int splitDim = -1;
  int64_t bytesPerDevice = 0;
  double seconds = 0;
  std::string algorithm;
};

struct RedistributionRecord {
  std::string tensor;
  std::string fromOp;  ///< empty for parameters and inputs
  std::string toOp;
  std::string direction;  ///< "forward" or "backward"
  bool gradientSync = false;
  double seconds = 0;
  int64_t bytesPerDevice = 0;
  std::vector<StepRecord> steps;
};

/// One pipeline stage (the whole device group without pipelining) in the estimate: which ops it
/// runs, and the step model's time and memory for it.
struct StageRecord {
  int stage = 0;
  std::vector<std::string> blocks;  ///< first and last block of its ops
  int64_t ops = 0;
  ir::StageEstimate estimate;
};

struct EstimateRecord {
  double stepTimeSeconds = 0;
  /// Samples one step trains (the graph's micro-batch times the micro-batches); 0 where the
  /// graph does not say which dim is the batch, and then no tokens per second either.
  int64_t samplesPerStep = 0;
  double tokensPerSecond = 0;
  /// Model FLOPs (3 x forward, recompute not counted) per second per device, and that over the
  /// device's peak at the model's precision.
  double tflopsPerDevice = 0;
  double mfu = 0;
  /// The step splits into compute (recompute included), exposed communication (activation
  /// redistributions, point-to-point sends and gradient synchronisation not hidden behind the
  /// backward), the pipeline bubble and the optimizer step.
  double computeSeconds = 0;
  double communicationSeconds = 0;  ///< exposed
  double bubbleSeconds = 0;
  double bubbleFraction = 0;
  double gradientSyncSeconds = 0;  ///< part of communicationSeconds
  double optimizerSeconds = 0;
  int64_t peakMemoryBytes = 0;
  int64_t deviceMemoryBytes = 0;  ///< capacity of one device
  bool fits = true;
  /// The peak stage's memory band (planner/memory_band.h) and where it lies against the device:
  /// "fits", "tight" or "over"; empty in a plan file written before bands.
  int64_t memoryBandLowBytes = 0;
  int64_t memoryBandHighBytes = 0;
  std::string memoryVerdict;
  std::vector<int64_t> memoryByDevice;
  ir::MemoryBreakdown memory;  ///< of the peak stage
  std::vector<StageRecord> stages;
  /// The stage holding the most memory (the first on a tie; 0 without stages).
  [[nodiscard]] int fullestStage() const {
    int fullest = 0;
    for (const StageRecord& stage : stages) {
      if (stage.estimate.memory.total() >
          stages[static_cast<size_t>(fullest)].estimate.memory.total()) {
        fullest = stage.stage;
      }
    }
    return fullest;
  }
};

/// The global plan features (seeds 001 and 004).
struct FeaturesRecord {
  bool optimizerParallel = false;
  int64_t optimizerThresholdKb = 64;
  bool gradientAccumulationShard = false;
  bool optimizerGroupUpdate = false;
  ir::Recompute recompute = ir::Recompute::kNone;  ///< layer recompute
  bool mpCommRecompute = true;
  bool parallelOptimizerCommRecompute = false;
  bool recomputeSliceActivation = false;
  std::string bucketing = "none";
  int64_t bucketBytes = 0;
  bool enableAllToAll = false;
};

/// How a parameter is stored (optimizer parallel) and where (device or host).
struct ParameterRecord {
  std::string name;
  int64_t optimizerShards = 1;
  int shardDim = -1;
  std::string placement = "device";
  std::string note;  ///< why it is not sharded
};

struct FusedCollectiveRecord {
  std::string primitive;
  bool gradient = true;
  int64_t bytes = 0;
  double seconds = 0;
  double unfusedSeconds = 0;
};

struct FusionGroupRecord {
  std::string name;
  int stage = 0;
  std::vector<std::string> parameters;
  std::vector<FusedCollectiveRecord> collectives;
};

struct InputsRecord {
  std::string model;      ///< preset name or file path
  std::string modelHash;  ///< FNV-1a 64 of the canonical graph JSON, hex
  std::string cluster;
  std::string clusterHash;  ///< FNV-1a 64 of the cluster description, hex
  int64_t microBatch = 0;
  int64_t sequence = 0;
};

/// A change that makes a plan that does not fit fit (planner::adviseFit), verified by planning
/// it: the flags (which replace the same flags of the command) and the run-yaml keys.
struct FixRecord {
  std::vector<std::string> flags;
  std::vector<std::pair<std::string, std::string>> yaml;
  double stepSeconds = 0;
  int64_t samplesPerStep = 0;
  int64_t peakMemoryBytes = 0;
};

struct Plan {
  int version = kPlanFormatVersion;
  std::string search = "semi_auto";
  int64_t devices = 0;
  std::vector<int> ranks;
  InputsRecord inputs;
  std::vector<OpRecord> ops;
  std::vector<RedistributionRecord> redistributions;
  /// Conflicts a search reconciled, one line each (sharding propagation).
  std::vector<std::string> conflicts;
  ir::PipelineShape pipeline;
  FeaturesRecord features;
  /// The training setup the plan realises, when it has one: a model annotated Megatron-style
  /// (plan --tp, a semi-auto run yaml) with its pipeline, micro-batch, schedule, recompute and
  /// ZeRO stage, its batch, precision, framework and placement; or an op-level search's plan whose
  /// shardings planner::withMegatronSetup found to be Megatron-LM's. Unset where an op-level
  /// search chose shardings no single tensor-parallel degree gives. The exporters write it; the
  /// plan file keeps its parallel part as "parallel_config".
  std::optional<ir::TrainingSetup> setup;
  /// Per data-parallel replica, in rank order, the samples it trains per step (`plan --dp-shares`:
  /// a faster kind of device takes more); empty: the batch split evenly. Needs `setup`, one share
  /// per replica, each a whole number of samples per micro-batch.
  std::vector<int64_t> dataParallelShares;
  std::vector<ParameterRecord> parameters;
  std::vector<FusionGroupRecord> fusionGroups;
  EstimateRecord estimate;
  /// Only for a plan that does not fit: the fastest changes that fit, at most three. Advice for
  /// the user, written as "fixes" and not read back.
  std::vector<FixRecord> fixes;
};

}  // namespace autopar::plan
