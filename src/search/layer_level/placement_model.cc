#include "search/layer_level/placement_model.h"

#include <algorithm>

namespace autopar::search {

PlacementModel::PlacementModel(const PlacementProblem& problem)
    : problem_(problem), chunks_(static_cast<size_t>(problem.chunks())) {
  for (int64_t s = 0; s < problem.stages; ++s) {
    rows_.push_back(
        peakRows(problem.schedule, problem.stages, problem.virtualStages, problem.microBatches, s));
  }
}

double PlacementModel::recomputeSeconds(LoadView load) const {
  double seconds = 0;
  for (size_t i = 0; i < stacks() * chunks_; ++i) {
    seconds += static_cast<double>(load.recomputed[i]) *
               problem_.stacks[i / chunks_].layer.recomputeSeconds;
  }
  return seconds;
}

double PlacementModel::seconds(int64_t stage, LoadView load) const {
  double seconds = recomputeSeconds(load);
  for (size_t i = 0; i < stacks() * chunks_; ++i) {
    const LayerCost& layer = problem_.stacks[i / chunks_].layer;
    seconds += static_cast<double>(load.layers[i]) * (layer.forwardSeconds + layer.backwardSeconds);
  }
  if (stage == 0) seconds += problem_.first.seconds;
  if (stage == problem_.stages - 1) seconds += problem_.last.seconds;
  return seconds;
}

double PlacementModel::weightSeconds(int64_t stage, LoadView load) const {
  double seconds = 0;
  for (size_t i = 0; i < stacks() * chunks_; ++i) {
    seconds += static_cast<double>(load.layers[i]) *
               problem_.stacks[i / chunks_].layer.weightGradientSeconds;
  }
  if (stage == 0) seconds += problem_.first.weightGradientSeconds;
  if (stage == problem_.stages - 1) seconds += problem_.last.weightGradientSeconds;
  return seconds;
}

double PlacementModel::fill(double seconds, double weightSeconds) const {
  return fillSeconds(problem_.schedule, problem_.virtualStages, seconds, weightSeconds);
}

int64_t PlacementModel::staticBytes(int64_t stage, LoadView load) const {
  int64_t bytes = 0;
  for (size_t i = 0; i < stacks() * chunks_; ++i) {
    bytes += load.layers[i] * problem_.stacks[i / chunks_].layer.staticBytes;
  }
  if (stage == 0) bytes += problem_.first.staticBytes;
  if (stage == problem_.stages - 1) bytes += problem_.last.staticBytes;
  return bytes;
}

int64_t PlacementModel::chunkBytes(int64_t stage, LoadView load, size_t chunk) const {
  int64_t bytes = 0;
  for (size_t k = 0; k < stacks(); ++k) {
    const LayerCost& layer = problem_.stacks[k].layer;
    const int64_t n = load.layers[k * chunks_ + chunk];
    const int64_t c = load.recomputed[k * chunks_ + chunk];
    bytes += (n - c) * layer.activationBytes + c * layer.recomputedActivationBytes;
  }
  // The embedding runs on the first chunk of the first stage, the head on the last chunk of the
  // last stage.
  if (stage == 0 && chunk == 0) bytes += problem_.first.activationBytes;
  if (stage == problem_.stages - 1 && chunk + 1 == chunks_) bytes += problem_.last.activationBytes;
  return bytes;
}

int64_t PlacementModel::bytes(int64_t stage, LoadView load) const {
  int64_t peak = 0;
  for (const std::vector<int64_t>& row : rows(stage)) {
    int64_t held = 0;
    for (size_t c = 0; c < chunks_; ++c) held += row[c] * chunkBytes(stage, load, c);
    peak = std::max(peak, held);
  }
  return staticBytes(stage, load) + peak;
}

}  // namespace autopar::search
