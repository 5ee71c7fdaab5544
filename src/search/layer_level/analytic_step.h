#pragma once
/// \file
/// The closed-form step model the hybrid search screens candidates with (its inner loop): a
/// layered model's step time and per-stage memory from one layer's and the two ends' profiled
/// costs, without building or simulating the graph. The costs come from the full cost model run
/// on 2- and 4-layer probes (seed 003's block sampling, done analytically), so the closed form
/// and the full simulator share one cost model; the search re-ranks its leaders on the latter.
///
/// For P stages, V chunks per stage, m micro-batches, stage s with n_ks layers of stack k (a
/// vision tower's, the LLM's) of which c_ks are recomputed in full (T_s its forward and backward
/// time for one micro-batch, W_s the weight-gradient part of it):
///   pipeline  = m T_max + sum_s fill_s - max_s fill_s + 2 (P - 1) t_send, fill_s = T_s (1F1B),
///               T_s / V (interleaved) or max(T_s - 2 W_s, 0) (zero-bubble H1, Qi et al. 2023:
///               the fill and drain pass only the input-gradient part of each backward; bubble
///               (P - 1)(F + B - W) against 1F1B's (P - 1)(F + B + W));
///               search/layer_level/schedule_model.h
///   step      = pipeline + max_s (exposed gradient sync_s + optimizer_s + exposed gather_s),
///               the gather ZeRO 1's all-gather of the updated weights
/// Gradient synchronisation follows the candidate's bucketing (gradientBucketBytes, the policy the
/// full model is given too): one bucket of all the gradients, reduced after the backward and so
/// fully exposed (Megatron-LM without --overlap-grad-reduce), or buckets that overlap the last
/// micro-batch's backward except for the last bucket.
/// Parameters come in two replica groups: those replicated over the candidate's data-parallel
/// ranks (dp, DP x CP), and those split over expert parallelism, replicated over dp / EP only
/// (expertDp, Megatron-Core's expert-data-parallel group); each group's gradients are
/// synchronised and ZeRO-sharded over its own replicas.
/// ZeRO 1 shards the optimizer states over DP: the gradients are reduce-scattered after the
/// backward and the updated weights all-gathered in their own dtype (the distributed optimizer),
/// the gather exposed beyond one micro-batch's forward when it overlaps; 2 the gradients too,
/// reduce-scattered every micro-batch; 3 the weights too, the gathered copies of layers not
/// recomputed kept until their backward and those of recomputed layers gathered again every
/// micro-batch (as the cost model does).
/// Memory: state + the activations in flight at the stage's peak: min(P - s, m) micro-batches
/// under 1F1B, min(P, m) under ZB-H1 (deferred weight gradients hold their micro-batches); when
/// interleaved, each chunk's activations (the embedding's on chunk 0 of stage 0, the head's on
/// the last chunk of the last stage) times the micro-batches of that chunk the schedule holds,
/// at the worst moment (search/layer_level/schedule_model.h's peak rows).

#include <cstdint>
#include <functional>
#include <vector>

#include "search/layer_level/layer_placement.h"
#include "search/layer_level/schedule_model.h"
#include "util/expected.h"

namespace autopar::search {

/// Parameter, gradient and optimizer bytes on one device without ZeRO (TP-sharded only).
struct StateBytes {
  int64_t weights = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
  /// What ZeRO stage `zero` over `dp` data-parallel ranks leaves on a device.
  [[nodiscard]] int64_t sharded(int zero, int64_t dp) const;
  /// The same, part by part.
  [[nodiscard]] StateBytes shardedParts(int zero, int64_t dp) const;
  StateBytes& operator+=(const StateBytes& other);
  [[nodiscard]] int64_t total() const { return weights + gradients + optimizer; }
};

/// One layer of a stack, or what the first (embedding) or last (head) stage adds, for one
/// micro-batch on one device.
struct ProfiledPart {
  double forwardSeconds = 0;
  double backwardSeconds = 0;             ///< recompute not included
  double weightGradientSeconds = 0;       ///< the part of backward that computes weight gradients
  double recomputeSeconds = 0;            ///< what full recompute adds to backward
  double optimizerSeconds = 0;            ///< the update of its parameters without ZeRO
  StateBytes state;                       ///< parameters replicated over the data-parallel ranks
  StateBytes expertState;                 ///< parameters split over expert parallelism
  int64_t activationBytes = 0;            ///< kept for backward, per micro-batch in flight
  int64_t recomputedActivationBytes = 0;  ///< kept when recomputed in full
};

/// A (TP, SP, micro-batch size, recompute) setting's costs.
struct BlockProfile {
  std::vector<ProfiledPart> layers;  ///< one layer of each stack, in model order
  ProfiledPart first;
  ProfiledPart last;
  double sendSeconds = 0;  ///< one micro-batch's activations to the next stage
  /// Every stage's largest transient buffer: a collective's, or the backward's workspace (the
  /// loss gradient, a recomputed layer made again), the largest stage's taken for all (ZeRO 3
  /// adds two layers' gathered weights: one in use, one prefetched).
  int64_t bufferBytes = 0;
  /// Under a pipeline runtime that keeps every micro-batch's stage output until the step ends
  /// (torch.distributed.pipelining): one micro-batch's boundary activation, and the last
  /// stage's output (the logits); 0 otherwise.
  int64_t keptBoundaryBytes = 0;
  int64_t keptHeadBytes = 0;
};

struct AnalyticCandidate {
  int64_t stages = 1;
  int64_t virtualStages = 1;
  int64_t microBatches = 1;
  int64_t dp = 1;        ///< replicas of the parameters in `state`
  int64_t expertDp = 1;  ///< replicas of those in `expertState`: dp / EP
  int zero = 0;
  ir::Schedule schedule = ir::Schedule::k1F1B;
  /// Bytes per gradient bucket; 0: one bucket of all the gradients after the backward.
  int64_t gradientBucketBytes = 0;
  /// ZeRO 1's all-gather of the updated weights runs under the next step's first forward
  /// (Megatron-Core's --overlap-param-gather); false: it is exposed after the optimizer step.
  bool overlapParameterGather = false;
  /// ZeRO 1's gradients are all-reduced whole, not reduce-scattered (DeepSpeed's pipeline engine
  /// and BF16_Optimizer).
  bool gradientsAllReduced = false;
  /// The bytes reduced per byte of gradient state: 1, or a third where 16-bit gradients sit
  /// beside fp32 ones and the 16-bit copy is reduced (BF16_Optimizer: 2 of 6 bytes).
  double gradientSyncFraction = 1.0;
  /// Per stack, per stage; when interleaved per virtual stage: chunk c of stage s at c P + s.
  StackCounts layers;
  StackCounts recomputed;  ///< as `layers`: layers recomputed in full
};

/// The replicas a parameter's gradient is synchronised over.
enum class ReplicaGroup {
  kData,        ///< the candidate's dp ranks
  kExpertData,  ///< its expertDp ranks (the experts' replicas)
};

/// Seconds to synchronise (all-reduce) `bytes` of gradients per device over a replica group.
using GradientSync = std::function<double(int64_t bytes, ReplicaGroup group)>;

struct AnalyticEstimate {
  double stepSeconds = 0;
  double pipelineSeconds = 0;
  double tailSeconds = 0;          ///< exposed gradient sync and optimizer of the slowest tail
  std::vector<int64_t> peakBytes;  ///< per stage
  /// Per stage, the sharded model state within peakBytes (the runtime's allocator reserve leaves
  /// out what is allocated once: planner::runtimeReserveBytes).
  std::vector<StateBytes> stateBytes;
  [[nodiscard]] int64_t peak() const;
};

/// Layers per stack and virtual stage (per stage when V is 1), split as search/op_level/pipeline.h
/// assigns them: layer i of the L concatenated layers on virtual stage k = floor(i P V / L), which
/// runs on stage k mod P as its chunk k / P.
StackCounts evenLayers(const std::vector<int64_t>& stacks, int64_t stages,
                       int64_t virtualStages = 1);

/// Layers per stack and stage in contiguous runs of about equal forward and backward time, the
/// ends' work counted on the first and last stage, at least one layer per stage: a split for
/// stacks of unequal layers (a vision tower before an LLM), where an even count is far off.
StackCounts balancedLayers(const std::vector<int64_t>& stacks, const BlockProfile& profile,
                           int64_t stages);

/// The layer placement problem (search/layer_level/layer_placement.h) of a candidate's shape (its
/// layers and recompute are not read): the profile's layers and ends with their state sharded by
/// the candidate's ZeRO stage over its replicas, its schedule, chunks, micro-batches and sends, and
/// `deviceBytes` less the buffers. estimateAnalytic of the candidate with a placement's layers and
/// recompute then has the placement's step as its pipelineSeconds, and its peaks plus the buffers
/// as its peakBytes. Fails under ZeRO 2 and 3, whose per-micro-batch traffic (priced by the
/// bytes of each stage's gradients) and kept weights the placement does not model. Each byte the
/// step allocates and frees (activations, buffers, kept outputs) counts `transientScale` times:
/// 1 plus the allocator's reserve over them (planner::runtimeReserveBytes); the state, allocated
/// once, counts once.
Expected<PlacementProblem> placementProblemOf(const BlockProfile& profile,
                                              const AnalyticCandidate& shape,
                                              const std::vector<int64_t>& stacks,
                                              int64_t deviceBytes, double transientScale = 1.0);

AnalyticEstimate estimateAnalytic(const BlockProfile& profile, const AnalyticCandidate& candidate,
                                  const GradientSync& gradientSync);

}  // namespace autopar::search
