#pragma once
/// \file
/// The inner solver of the hybrid search (seed 003): how many layers of each stack (a vision
/// tower's, then the LLM's; identical layers within a stack) each pipeline stage runs, and how
/// many of them it recomputes in full, so that every stage fits in memory and the step is
/// shortest. The layers run in order, so under 1F1B and zero-bubble H1 each stage holds a
/// contiguous run of the concatenated layers (seed 003's vit_layer_placement and
/// llm_layer_placement); interleaved, each of the P V virtual stages (chunk c of stage s is
/// virtual stage c P + s) holds a contiguous run, in virtual-stage order. Every stage (every
/// virtual stage) holds at least one layer; the embedding's extra work is on the first (virtual)
/// stage and the head's on the last.
///
/// The model it optimises is the closed form's pipeline (search/layer_level/schedule_model.h),
/// exactly:
///   stage s with n_ks layers of stack k, c_ks of them recomputed (per chunk when interleaved):
///     T_s      = sum_k n_ks (f_k + b_k) + c_ks r_k                      (+ the ends' extras)
///     W_s      = sum_k n_ks w_k                                         (+ the ends' extras)
///     memory_s = sum_k n_ks state_k + max over the stage's peak rows of
///                sum_chunks held_c ((n_kc - c_kc) a_k + c_kc ar_k)       (+ extras)
///   step = m max_s T_s + sum_s fill_s - max_s fill_s + 2 (P - 1) t_send,
///          fill_s = T_s (1F1B), T_s / V (interleaved), max(T_s - 2 W_s, 0) (zero-bubble H1)
/// Recompute only adds time, so a stage recomputes the cheapest set of layers that makes it fit
/// (with two stacks: every count of the first, the fewest of the second that then fits;
/// interleaved: the fewest over every balanced split of its layers into its chunks). The solver
/// finds the least bottleneck B (the slowest stage's time) for which some placement fits (binary
/// search: a larger B only allows more), then tries each achievable B upward; for each, a dynamic
/// program over (stage, layers placed) finds the least sum of fill_s with every stage at most B,
/// and the step is m B + that sum - the largest fill + sends. Under 1F1B and interleaved the
/// largest fill is fill(B); under zero-bubble H1 it depends on the stage's W, so the program also
/// carries whether it has left a stage out (sum_s fill_s - max_s fill_s is the least sum over all
/// stages but one). The scan stops once a lower bound of the step at B exceeds the best step.
///
/// Interleaved, one stack only: a stage's time depends on its layer count N and recompute only,
/// so its option for N is the least recompute over the splits of N into its V chunks and every
/// recompute count per chunk that fits its peak rows. The chunks of a stage are balanced (each
/// holds floor(N / V) or ceil(N / V) layers; which chunks take the extra layers is free): the
/// closed form's interleaved bubble, (sum_s T_s - T_max) / V, takes a stage's chunks to run
/// about equally long: with balanced chunks it is 2.3% from the simulator on average, with
/// chunks split anywhere 12.6% and up to 35% (tests/integration/schedule_model_test.cc). Uneven
/// placements are uneven across stages. The split search tries both chunk sizes and every
/// recompute count for each chunk but the last, whose recompute it solves: O((2 N / V)^(V-1)) per
/// (stage, N) at worst, pruned by the best count so far; the search asks for V = 2 only
/// (search/layer_level/hybrid.h), where it is O(N) per (stage, N).
///
/// Cost: O(P L) stage options interleaved, O(P L^2) contiguous (each O(L) for two stacks), then
/// O(P L^2) per bottleneck tried in the dynamic program (twice that when it chooses the stage
/// left out).

#include <cstdint>
#include <vector>

#include "search/layer_level/schedule_model.h"
#include "util/expected.h"

namespace autopar::search {

/// One layer, one micro-batch, on one device of its stage.
struct LayerCost {
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  double recomputeSeconds = 0;            ///< extra backward time when the layer is recomputed
  int64_t staticBytes = 0;                ///< parameters, gradients and optimizer states
  int64_t activationBytes = 0;            ///< kept for backward without recompute
  int64_t recomputedActivationBytes = 0;  ///< kept when recomputed (the layer's input)
  /// The weight-gradient part of the backward (zero-bubble H1's W).
  double weightGradientSeconds = 0;
};

/// What the embedding (first stage) or the head (last stage) adds.
struct StageExtra {
  double seconds = 0;  ///< forward and backward, one micro-batch
  int64_t staticBytes = 0;
  int64_t activationBytes = 0;  ///< per micro-batch in flight
  double weightGradientSeconds = 0;
};

/// A stack of identical layers.
struct LayerStack {
  int64_t layers = 0;
  LayerCost layer;
};

struct PlacementProblem {
  std::vector<LayerStack> stacks;  ///< in model order; one or two (one when interleaved)
  int64_t stages = 1;
  /// Chunks per stage: V for the interleaved schedule, 1 otherwise.
  int64_t virtualStages = 1;
  int64_t microBatches = 1;
  int64_t memoryLimitBytes = 0;
  ir::Schedule schedule = ir::Schedule::k1F1B;
  StageExtra first;
  StageExtra last;
  double sendSeconds = 0;  ///< one micro-batch's boundary activation to the next stage
  [[nodiscard]] int64_t layers() const;  ///< of all stacks
  [[nodiscard]] int64_t chunks() const;  ///< chunksOf(schedule, virtualStages)
};

/// Per stack, per stage; interleaved per virtual stage (chunk c of stage s at c P + s).
using StackCounts = std::vector<std::vector<int64_t>>;

/// Zeros in the shape of `counts` (a placement that recomputes nothing).
StackCounts zerosLike(const StackCounts& counts);

struct Placement {
  StackCounts layers;
  StackCounts recomputed;  ///< layers recomputed in full
  double stepSeconds = 0;
  std::vector<int64_t> peakBytes;  ///< per stage
};

/// The model's step time and per-stage memory for a given placement (no feasibility check).
Placement evaluatePlacement(const PlacementProblem& problem, StackCounts layers,
                            StackCounts recomputed);

/// The exact optimum; fails, naming the stage and the need, when no placement fits, and when the
/// problem has no stack, more than two, or two interleaved.
Expected<Placement> placeLayers(const PlacementProblem& problem);

/// Every placement and recompute count tried (small problems only; interleaved, every placement
/// whose stages have balanced chunks): the test's yardstick.
Expected<Placement> placeLayersBruteForce(const PlacementProblem& problem);

}  // namespace autopar::search
