#include "layout/redistribution_steps.h"

#include <algorithm>

namespace autopar::layout {

namespace {

bool contains(const std::vector<int>& axes, int axis) {
  return std::find(axes.begin(), axes.end(), axis) != axes.end();
}

bool isPrefix(const std::vector<int>& prefix, const std::vector<int>& axes) {
  return prefix.size() <= axes.size() && std::equal(prefix.begin(), prefix.end(), axes.begin());
}

/// Tracks the current dim axes and partial axes while emitting steps on one matrix.
class StepPlanner {
 public:
  StepPlanner(const TensorLayout& from, const TensorLayout& to)
      : matrix_(from.deviceMatrix), to_(to), dimAxes_(from.dimAxes), partial_(from.partialAxes) {}

  /// Step 1: partial axes the target neither keeps nor splits a dim over.
  void allReduceDroppedPartials() {
    for (int axis : std::vector<int>(partial_)) {
      const bool splitInTarget =
          std::any_of(to_.dimAxes.begin(), to_.dimAxes.end(),
                      [&](const auto& axes) { return contains(axes, axis); });
      if (contains(to_.partialAxes, axis) || splitInTarget) continue;
      emit(PrimitiveKind::kAllReduce, axis, -1);
      std::erase(partial_, axis);
    }
  }

  /// Step 1b, with all-to-all enabled: a partial axis that is the next one the target splits a
  /// dim over, when that dim's axes are already a prefix of its target's, is reduce-scattered
  /// before anything moves, so the all-to-alls and gathers of step 2 carry the reduced slice
  /// instead of the partial sums (Megatron-Core's MoE combine reduce-scatters over the
  /// tensor-parallel group, then runs the all-to-all over the expert-parallel one). MindSpore's
  /// default (all-to-all off) keeps its order, and the plans searched under it stay as they were.
  void reduceScatterReadyPartials() {
    for (int dim = 0; dim < static_cast<int>(dimAxes_.size()); ++dim) {
      for (int axis = nextTargetAxis(dim); axis >= 0 && contains(partial_, axis);
           axis = nextTargetAxis(dim)) {
        emit(PrimitiveKind::kReduceScatter, axis, dim);
        std::erase(partial_, axis);
        dimAxes_[dim].push_back(axis);
      }
    }
  }

  /// Step 2: until every dim's axes are a prefix of the target's, take the minor-most axis off a
  /// dim that is not, preferring an all-to-all into a ready dim when enabled. With all-to-all on,
  /// dims whose minor axis no other dim wants are gathered first, so that the dims they free can
  /// then take the wanted axes by all-to-all.
  void gatherBeyondCommonPrefix(bool enableAllToAll) {
    while (true) {
      if (enableAllToAll && tryAllToAll()) continue;
      const int dim = dimToGather(enableAllToAll);
      if (dim < 0) return;
      emit(PrimitiveKind::kAllGather, dimAxes_[dim].back(), dim);
      dimAxes_[dim].pop_back();
    }
  }

  /// Step 3: append the target's remaining axes, reduce-scattering the ones still partial.
  void appendTargetAxes() {
    for (int dim = 0; dim < static_cast<int>(dimAxes_.size()); ++dim) {
      const auto& target = to_.dimAxes[dim];
      for (size_t i = dimAxes_[dim].size(); i < target.size(); ++i) {
        const int axis = target[i];
        const bool isPartial = contains(partial_, axis);
        emit(isPartial ? PrimitiveKind::kReduceScatter : PrimitiveKind::kSplit, axis, dim);
        if (isPartial) std::erase(partial_, axis);
        dimAxes_[dim].push_back(axis);
      }
    }
  }

  /// Step 4: the target's partial axes the data is not yet partial over.
  void makeTargetPartials() {
    for (int axis : to_.partialAxes) {
      if (contains(partial_, axis)) continue;
      emit(PrimitiveKind::kMakePartial, axis, -1);
      partial_.push_back(axis);
    }
  }

  std::vector<RedistStep> takeSteps() { return std::move(steps_); }

 private:
  [[nodiscard]] bool needsGather(int dim) const {
    return !isPrefix(dimAxes_[dim], to_.dimAxes[dim]);
  }

  /// The first dim that needs a gather, preferring (when asked) one whose minor axis is in no
  /// other dim's target axes; -1 when none needs one.
  [[nodiscard]] int dimToGather(bool preferUnwantedAxes) const {
    const int numDims = static_cast<int>(dimAxes_.size());
    int first = -1;
    for (int dim = 0; dim < numDims; ++dim) {
      if (!needsGather(dim)) continue;
      if (!preferUnwantedAxes) return dim;
      if (first < 0) first = dim;
      if (!wantedByOtherDim(dimAxes_[dim].back(), dim)) return dim;
    }
    return first;
  }

  [[nodiscard]] bool wantedByOtherDim(int axis, int dim) const {
    for (int other = 0; other < static_cast<int>(to_.dimAxes.size()); ++other) {
      if (other != dim && contains(to_.dimAxes[other], axis)) return true;
    }
    return false;
  }

  /// The target's next axis for `dim` when the dim's axes are already a prefix of the target's.
  [[nodiscard]] int nextTargetAxis(int dim) const {
    const auto& target = to_.dimAxes[dim];
    if (!isPrefix(dimAxes_[dim], target) || dimAxes_[dim].size() == target.size()) return -1;
    return target[dimAxes_[dim].size()];
  }

  bool tryAllToAll() {
    const int numDims = static_cast<int>(dimAxes_.size());
    for (int dim = 0; dim < numDims; ++dim) {
      if (!needsGather(dim)) continue;
      const int axis = dimAxes_[dim].back();
      for (int splitDim = 0; splitDim < numDims; ++splitDim) {
        if (splitDim == dim || nextTargetAxis(splitDim) != axis) continue;
        emit(PrimitiveKind::kAllToAll, axis, dim, splitDim);
        dimAxes_[dim].pop_back();
        dimAxes_[splitDim].push_back(axis);
        return true;
      }
    }
    return false;
  }

  void emit(PrimitiveKind kind, int axis, int dim, int splitDim = -1) {
    RedistStep step;
    step.kind = kind;
    step.matrix = matrix_;
    step.axis = axis;
    step.dim = dim;
    step.splitDim = splitDim;
    steps_.push_back(std::move(step));
  }

  const DeviceMatrix& matrix_;
  const TensorLayout& to_;
  std::vector<std::vector<int>> dimAxes_;
  std::vector<int> partial_;
  std::vector<RedistStep> steps_;
};

}  // namespace

std::vector<RedistStep> stepsOnCommonMatrix(const TensorLayout& from, const TensorLayout& to,
                                            bool enableAllToAll) {
  StepPlanner planner(from, to);
  planner.allReduceDroppedPartials();
  if (enableAllToAll) planner.reduceScatterReadyPartials();
  planner.gatherBeyondCommonPrefix(enableAllToAll);
  planner.appendTargetAxes();
  planner.makeTargetPartials();
  return planner.takeSteps();
}

std::vector<RedistStep> stepsViaReplication(const TensorLayout& from, const TensorLayout& to) {
  // Gathering to the replicated layout and splitting from it are both instances of the common
  // matrix plan, each on one matrix.
  const TensorLayout replicatedOnSource = TensorLayout::replicated(from.deviceMatrix, from.shape);
  const TensorLayout replicatedOnTarget = TensorLayout::replicated(to.deviceMatrix, to.shape);
  std::vector<RedistStep> steps = stepsOnCommonMatrix(from, replicatedOnSource, false);
  std::vector<RedistStep> splits = stepsOnCommonMatrix(replicatedOnTarget, to, false);
  steps.insert(steps.end(), splits.begin(), splits.end());
  return steps;
}

}  // namespace autopar::layout
