#pragma once
/// \file
/// The inner solver of the hybrid search (seed 003): how many of a stack's identical layers each
/// pipeline stage runs (contiguous, at least one each, the embedding's extra work on the first
/// stage and the head's on the last) and how many of them each stage recomputes in full, so
/// that every stage fits in memory and the step is shortest.
///
/// The model it optimises, for P stages and m micro-batches under 1F1B:
///   stage s with n_s layers, c_s of them recomputed:
///     time_s   = n_s (f + b) + c_s r                       (+ the first/last stage's extras)
///     memory_s = n_s w + k_s ((n_s - c_s) a + c_s a_r)     (+ extras), k_s = min(P - s, m)
///   step = sum_s time_s + (m - 1) max_s time_s
/// (the fill and drain pass every stage once; the steady state runs at the slowest stage).
/// Recompute only adds time, so each stage recomputes the fewest layers that make it fit. The
/// solver tries each achievable slowest-stage time B in increasing order and, by dynamic
/// programming over (stage, layers placed), finds the least total recompute with every stage at
/// most B; the step is then the sum plus (m - 1) B. It is exact for this model.

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

struct PlacementProblem {
  int64_t layers = 0;
  int64_t stages = 1;
  int64_t microBatches = 1;
  int64_t memoryLimitBytes = 0;
  LayerCost layer;
  StageExtra first;
  StageExtra last;
};

struct Placement {
  std::vector<int64_t> layers;      ///< per stage
  std::vector<int64_t> recomputed;  ///< per stage, layers recomputed in full
  double stepSeconds = 0;
  std::vector<int64_t> peakBytes;  ///< per stage
};

/// The model's step time and per-stage memory for a given placement (no feasibility check).
Placement evaluatePlacement(const PlacementProblem& problem, std::vector<int64_t> layers,
                            std::vector<int64_t> recomputed);

/// The exact optimum; fails, naming the stage and the need, when no placement fits.
Expected<Placement> placeLayers(const PlacementProblem& problem);

/// Every placement and recompute count tried (small problems only): the test's yardstick.
Expected<Placement> placeLayersBruteForce(const PlacementProblem& problem);

}  // namespace autopar::search
