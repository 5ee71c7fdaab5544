#pragma once
/// \file
/// The inner solver of the hybrid search (seed 003): how many layers of each stack (a vision
/// tower's, then the LLM's; identical layers within a stack) each pipeline stage runs, and how
/// many of them each stage recomputes in full, so that every stage fits in memory and the step is
/// shortest. The stacks run in order, so each stage holds a contiguous run of the concatenated
/// layers: seed 003's vit_layer_placement and llm_layer_placement. Every stage holds at least one
/// layer; the embedding's extra work is on the first stage and the head's on the last.
///
/// The model it optimises, for P stages and m micro-batches under 1F1B:
///   stage s with n_ks layers of stack k, c_ks of them recomputed:
///     time_s   = sum_k n_ks (f_k + b_k) + c_ks r_k                      (+ the ends' extras)
///     memory_s = sum_k n_ks w_k + K_s ((n_ks - c_ks) a_k + c_ks ar_k)    (+ extras),
///                K_s = min(P - s, m), or min(P, m) for every stage under zero-bubble H1
///   step = sum_s time_s + (m - 1) max_s time_s
/// (the fill and drain pass every stage once; the steady state runs at the slowest stage).
/// Recompute only adds time, so each stage recomputes the cheapest set of layers that makes it
/// fit (with two stacks: every count of the first, the fewest of the second that then fits). The
/// solver finds the least slowest-stage time B for which some placement fits (binary search: a
/// larger B only allows more), then tries each achievable B upward; for each, a dynamic program
/// over (stage, layers placed) finds the least total recompute time with every stage at most B.
/// The step is then the sum plus (m - 1) B, and the scan stops once (m - 1) B alone exceeds the
/// best step. It is exact for this model, for one or two stacks. Under zero-bubble H1 the step
/// differs from this one by 2 W (total weight-gradient time, fixed) less 2 W of the slowest stage,
/// which the solver does not see; the search evaluates the placed plan on its simulator.

#include <cstdint>
#include <vector>

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
};

/// What the embedding (first stage) or the head (last stage) adds.
struct StageExtra {
  double seconds = 0;  ///< forward and backward, one micro-batch
  int64_t staticBytes = 0;
  int64_t activationBytes = 0;  ///< per micro-batch in flight
};

/// A stack of identical layers.
struct LayerStack {
  int64_t layers = 0;
  LayerCost layer;
};

struct PlacementProblem {
  std::vector<LayerStack> stacks;  ///< in model order; one or two
  int64_t stages = 1;
  int64_t microBatches = 1;
  int64_t memoryLimitBytes = 0;
  bool zeroBubble = false;  ///< every stage holds min(P, m) micro-batches (ZB-H1)
  StageExtra first;
  StageExtra last;
  [[nodiscard]] int64_t layers() const;  ///< of all stacks
};

/// Per stack, per stage.
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

/// The exact optimum; fails, naming the stage and the need, when no placement fits or when the
/// problem has no stack or more than two.
Expected<Placement> placeLayers(const PlacementProblem& problem);

/// Every placement and recompute count tried (small problems only): the test's yardstick.
Expected<Placement> placeLayersBruteForce(const PlacementProblem& problem);

}  // namespace autopar::search
