#pragma once
/// \file
/// One Megatron-LM-style training configuration (TP, PP, DP, micro-batch and global batch,
/// sequence parallel, recompute, ZeRO stage, precision), evaluated without searching: the model
/// is built Megatron-style with these degrees and costed by the same cost model and pipeline
/// simulator as `autopar plan`. `autopar estimate` prints one; `autopar search` ranks many;
/// bench/calibration.py runs the published rows of shared/data/published/calibration.jsonl
/// through `autopar estimate`.
///
/// The mapping onto the plan features:
///   --pp P, --vpp V     P pipeline stages; V > 1 runs the interleaved schedule with V chunks
///   --ep E              the experts of a mixture-of-experts model split over E of the DP ranks
///                       (Megatron-Core: E divides DP and the experts); the world stays
///                       TP x PP x DP x CP, and the redistributions may use all-to-all (the
///                       token dispatcher's)
///   --zero-bubble       the zero-bubble H1 schedule (Qi et al. 2023) instead of 1F1B
///   --gbs G, --mbs B    G / (DP x B) micro-batches per step
///   --zero 1            the distributed optimizer: whole parameters, states / DP, gradients
///                       reduce-scattered and the updated slices all-gathered once per step
///   --zero 2            as 1, gradients sharded too (reduce-scattered every micro-batch)
///   --zero 3            parameters stored as slices, gathered for forward, for a recomputed
///                       forward and again for backward (ZeRO-3)
///   --precision         the transformer's compute dtype (fp8 runs at the device's fp8 peak);
///                       gradients accumulate and reduce in fp32 but under fp16, as Megatron-LM
///                       does by default
///   --overlap-grad-reduce   gradients reduce in buckets (max(40M, 1M x DP) elements, Megatron-
///                       Core's default) as the last micro-batch's backward makes them
///   --overlap-param-gather  the updated parameters' all-gather hides under the next forward
///   --tp-comm-overlap   tensor-parallel communication hides under the matmuls
///   --async-tensor-model-parallel-allreduce  the backward's tensor-parallel communication hides
///                       under the backward matmuls (Megatron-LM 2022)
///   --list-collectives  all-gathers and reduce-scatters take per-rank tensor lists, one copy
///                       per rank (PyTorch's list API, DeepSpeed's ZeRO-3 in 2021)
///   --attention unfused the score matrix in memory (Megatron-LM's attention before 2023)
///   --no-gradient-accumulation-fusion  each micro-batch's weight gradients are added into the
///                       accumulation buffer by a separate kernel (Megatron-LM before 2022)

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "cost/framework.h"
#include "frontend/transformer.h"
#include "ir/parallel_config.h"
#include "ir/training_setup.h"
#include "planner/memory_band.h"
#include "planner/op_search.h"
#include "planner/plan_evaluation.h"
#include "search/layer_level/layer_placement.h"
#include "util/expected.h"

namespace autopar::planner {

/// A training setup (ir::TrainingSetup: the parallel degrees, batch, precision, framework and code
/// path, optimizer state, placement) of one model on one cluster, and how to price it.
struct MegatronConfig : ir::TrainingSetup {
  /// Under the default framework's (Megatron-Core's) code path.
  MegatronConfig() { codePath = cost::frameworkProfile(framework).codePath; }

  std::string model;  ///< preset, Hugging Face config.json or dimensions JSON
  std::string cluster = "dgx-a100-80g";
  int nodes = 0;             ///< 0: as many as the world size needs
  int devicesPerNode = 0;    ///< 0: the preset's
  double interNodeGbps = 0;  ///< > 0: the inter-node bandwidth per device, Gbit/s
  /// Replaces the model's configuration (the placement search's 2- and 4-layer probes).
  std::optional<frontend::TransformerConfig> transformer;
  /// Who shards each block on its TP x CP submesh (planner/op_search.h): Megatron-LM's
  /// annotation, or an op-level search, whose sharding the configuration takes when the full
  /// model prices it faster than Megatron's (Megatron's strategies are always a candidate).
  /// Expert parallelism keeps Megatron's annotation.
  OpSearch opSearch = OpSearch::kMegatron;
  /// The op-level search's cache, shared by the copies of one search's configurations; made on
  /// first use when empty.
  std::shared_ptr<BlockShardingOracle> blockOracle;

  /// The constants the configuration is priced with (--cost-model; cost/constants.h).
  cost::CostModel costModel = cost::shippedCostModel();

  /// With `nodes` given, a configuration using fewer devices than they hold is refused, naming
  /// the idle devices (--allow-idle: planned on the devices it uses).
  bool allowIdle = true;
};

struct ConfigEstimate {
  Evaluated evaluated;
  cluster::Cluster cluster;
  int64_t worldSize = 0;
  int64_t microBatches = 0;
  int64_t sequence = 0;
  double stepSeconds = 0;
  double tokensPerSecond = 0;
  /// Model FLOPs: 3 x the forward FLOPs of one step, recompute not counted.
  double modelFlopsPerStep = 0;
  /// Hardware FLOPs: model FLOPs plus the recomputed forward work.
  double hardwareFlopsPerStep = 0;
  double tflopsPerGpu = 0;               ///< model FLOPs
  double hardwareTflopsPerGpu = 0;       ///< recompute counted
  double mfu = 0;                        ///< model FLOPs over the device's dense peak
  std::vector<int64_t> peakMemoryBytes;  ///< per pipeline stage, the runtime's reserve included
  std::vector<MemoryBand> peakBands;     ///< per pipeline stage
  /// Per pipeline stage, what the step allocates and frees with the allocator's reserve over it:
  /// the part of the peak whose measured error makes the band.
  std::vector<int64_t> transientBytes;
  int64_t memoryMarginBytes = 0;  ///< MegatronConfig::memoryMarginBytes
  ir::MemoryPolicy memoryPolicy = ir::MemoryPolicy::kExpected;  ///< MegatronConfig's
  /// With an op-level search (MegatronConfig::opSearch): whether its block sharding was taken
  /// (faster than Megatron's on the full model), and both steps (0: not evaluated).
  bool opSearchTaken = false;
  double megatronStepSeconds = 0;
  double opSearchStepSeconds = 0;
  /// Under the memory policy: every stage's peak (kExpected) or band top (kSafe) is usable.
  [[nodiscard]] bool fits() const;
  /// The worst stage's verdict: over if one is over, else tight if one is tight.
  [[nodiscard]] MemoryVerdict verdict() const;
  /// The index of the fullest stage (the first of equals).
  [[nodiscard]] size_t fullestStage() const;
  /// The fullest stage's peak.
  [[nodiscard]] int64_t peakBytes() const;
};

/// The gradient bucketing both step models take (the full model's buckets and the closed form's
/// gradientBucketBytes): Megatron-LM reduces its contiguous gradient buffer after the backward in
/// one collective (0 here), or with --overlap-grad-reduce (Megatron-Core's
/// DistributedDataParallel) in buckets of max(40M, 1M x DP x CP) elements as the last
/// micro-batch's backward completes them.
int64_t gradientBucketBytes(const MegatronConfig& config);

/// What a training process holds beyond its tensors (data/cost_model.json's sources): the CUDA
/// context, NCCL's buffers for each process group (one per parallel dimension wider than 1), and
/// the caching allocator's reserve over the tensors the step allocates and frees,
/// `transientBytes` (transientStageBytes). Both step models add it to every stage's peak.
///   TP 8 PP 4 DP 2, 40 GiB made and freed in the step: 1 GiB + 3 x 128 MiB + 10% of 40 GiB
///   = 5.38 GiB
int64_t runtimeReserveBytes(const ir::ParallelConfig& config, int64_t transientBytes,
                            const cost::CostConstants& costModel);

/// What a stage's peak may reach: the device's memory less --memory-margin. Both step models
/// judge fitting by it.
int64_t usableMemoryBytes(const cluster::Cluster& cluster, int64_t marginBytes);

/// The compute dtype a --precision names (bf16, fp16 or fp8).
Expected<ir::DType> parsePrecision(const std::string& name);

/// The cluster preset (or spec) with just enough nodes for the world size (or `config.nodes`),
/// cut to the world size, with --inter-node-gbps applied.
Expected<cluster::Cluster> clusterFor(const MegatronConfig& config);

/// Checks --ep against the model: it has experts, and --ep divides them and --dp. The error
/// names the flag and the degrees that would fit:
///   "--ep 3: does not divide the 8 experts; --ep 1, 2, 4 or 8 would"
Status checkExpertParallel(const MegatronConfig& config,
                           const frontend::TransformerConfig& transformer);

/// The model's dimensions: config.transformer when set, else read from config.model.
Expected<frontend::TransformerConfig> transformerOf(const MegatronConfig& config);

/// Checks the configuration (one line per problem, naming the flag) and evaluates it; with an
/// op-level search, both its sharding and Megatron's, keeping the one prefersOpSearch picks.
Expected<ConfigEstimate> estimateConfig(const MegatronConfig& config);

/// The configuration with its blocks sharded by its op-level search only (not compared with
/// Megatron's); nullopt under Megatron's annotation or expert parallelism.
Expected<std::optional<ConfigEstimate>> estimateOpSearchSharding(const MegatronConfig& config);

/// Whether the op-level search's sharding replaces Megatron's: when only it fits, or both (or
/// neither) fit and it is faster.
bool prefersOpSearch(bool fits, double seconds, bool megatronFits, double megatronSeconds);

/// A placement given per stage (seed 003's layer_placement and layer_recompute): layers and
/// layers recomputed in full of each stack per stage, per virtual stage when interleaved
/// (chunk c of stage s at c PP + s). Empty lists: not given.
struct GivenPlacement {
  std::vector<int64_t> llmLayers;
  std::vector<int64_t> vitLayers;
  std::vector<int64_t> llmRecompute;
  std::vector<int64_t> vitRecompute;
  [[nodiscard]] bool empty() const {
    return llmLayers.empty() && vitLayers.empty() && llmRecompute.empty() && vitRecompute.empty();
  }
};

/// The given placement as per-stack counts ([vision tower,] LLM), checked against the model and
/// the stages; errors name the flag (--llm-layers, --vit-layers, --llm-recompute,
/// --vit-recompute). Empty counts when none is given.
Expected<std::pair<search::StackCounts, search::StackCounts>> placementOf(
    const GivenPlacement& given, const MegatronConfig& config,
    const frontend::TransformerConfig& transformer);

/// Layers of one stack (blocks "<stack>.layer.<i>": "llm" or "vit") per pipeline stage, in stage
/// order, and how many of them are recomputed in full (every layer under --recompute full, else
/// the recomputed blocks).
using ir::StageLayers;
StageLayers layersPerStage(const ConfigEstimate& estimate, int64_t stages,
                           std::string_view stack = "llm");

/// Layers of one stack per virtual stage (chunk c of stage s at c P + s; per stage without
/// interleaving).
std::vector<int64_t> layersPerVirtualStage(const ConfigEstimate& estimate,
                                           std::string_view stack = "llm");

}  // namespace autopar::planner
