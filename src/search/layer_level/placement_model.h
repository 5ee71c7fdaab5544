#pragma once
/// \file
/// One stage under the layer placement's model (search/layer_level/layer_placement.h): its time,
/// its weight-gradient time and its peak memory for given layer and recompute counts. The exact
/// solver, the brute force and evaluatePlacement all price stages here, so they agree.
///
/// A stage's load is a list of counts per stack k and chunk c, entry k V + c (V = 1 but when
/// interleaved), e.g. one stack over V = 2 chunks holding 3 and 2 layers, 1 of the 3 recomputed:
/// layers {3, 2}, recomputed {1, 0}.

#include <cstdint>
#include <vector>

#include "search/layer_level/layer_placement.h"

namespace autopar::search {

/// Counts of one stage: entry k V + c for stack k, chunk c (V the problem's chunks()).
struct LoadView {
  const int64_t* layers;
  const int64_t* recomputed;
};

class PlacementModel {
 public:
  explicit PlacementModel(const PlacementProblem& problem);

  [[nodiscard]] const PlacementProblem& problem() const { return problem_; }
  [[nodiscard]] size_t stacks() const { return problem_.stacks.size(); }
  [[nodiscard]] size_t chunks() const { return chunks_; }
  /// Stage `stage`'s peak rows (search/layer_level/schedule_model.h): micro-batches held per chunk.
  [[nodiscard]] const std::vector<std::vector<int64_t>>& rows(int64_t stage) const {
    return rows_[static_cast<size_t>(stage)];
  }

  /// T_s: forward, backward and recompute of one micro-batch, with the stage's ends.
  [[nodiscard]] double seconds(int64_t stage, LoadView load) const;
  [[nodiscard]] double recomputeSeconds(LoadView load) const;
  /// W_s: the weight-gradient part of T_s.
  [[nodiscard]] double weightSeconds(int64_t stage, LoadView load) const;
  /// What the stage adds to the fill and drain when it is not the slowest.
  [[nodiscard]] double fill(double seconds, double weightSeconds) const;
  /// Parameters, gradients and optimizer states, with the stage's ends.
  [[nodiscard]] int64_t staticBytes(int64_t stage, LoadView load) const;
  /// One micro-batch's activations of chunk `chunk`, with the end it carries.
  [[nodiscard]] int64_t chunkBytes(int64_t stage, LoadView load, size_t chunk) const;
  /// Static bytes plus the activations at the worst of the stage's peak rows.
  [[nodiscard]] int64_t bytes(int64_t stage, LoadView load) const;

 private:
  const PlacementProblem& problem_;
  size_t chunks_;
  std::vector<std::vector<std::vector<int64_t>>> rows_;  ///< per stage
};

}  // namespace autopar::search
