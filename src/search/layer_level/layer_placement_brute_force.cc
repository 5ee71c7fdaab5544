// The yardstick for placeLayers: every split of the concatenated layers into contiguous runs, one
// per virtual stage in order (per stage unless interleaved; interleaved, each stage's chunks at
// most one layer apart, the space placeLayers searches), and every recompute count of every stack
// on every virtual stage, each priced by evaluatePlacement. Small problems only.

#include <algorithm>
#include <functional>
#include <limits>

#include "search/layer_level/layer_placement.h"

namespace autopar::search {

Expected<Placement> placeLayersBruteForce(const PlacementProblem& problem) {
  const int64_t total = problem.layers();
  const int64_t runs = problem.stages * problem.chunks();
  if (problem.stages < 1 || total < runs) return Error{"no placement fits"};
  Placement best;
  best.stepSeconds = std::numeric_limits<double>::infinity();
  const size_t stacks = problem.stacks.size();
  StackCounts layers(stacks, std::vector<int64_t>(static_cast<size_t>(runs), 0));
  StackCounts recomputed = layers;
  // Interleaved (one stack): the chunks of every stage at most one layer apart.
  const auto balanced = [&] {
    for (int64_t s = 0; s < problem.stages; ++s) {
      int64_t fewest = total;
      int64_t most = 0;
      for (int64_t v = s; v < runs; v += problem.stages) {
        fewest = std::min(fewest, layers[0][static_cast<size_t>(v)]);
        most = std::max(most, layers[0][static_cast<size_t>(v)]);
      }
      if (most - fewest > 1) return false;
    }
    return true;
  };
  std::function<void(size_t)> chooseRecompute = [&](size_t slot) {
    if (slot == stacks * static_cast<size_t>(runs)) {
      Placement trial = evaluatePlacement(problem, layers, recomputed);
      const bool fits = std::all_of(trial.peakBytes.begin(), trial.peakBytes.end(),
                                    [&](int64_t b) { return b <= problem.memoryLimitBytes; });
      if (fits && trial.stepSeconds < best.stepSeconds) best = std::move(trial);
      return;
    }
    const size_t k = slot % stacks;
    const size_t v = slot / stacks;
    for (int64_t c = 0; c <= layers[k][v]; ++c) {
      recomputed[k][v] = c;
      chooseRecompute(slot + 1);
    }
  };
  // Run v takes `count` layers from position `from` of the concatenated stacks.
  std::function<void(int64_t, int64_t)> chooseLayers = [&](int64_t v, int64_t from) {
    const int64_t left = total - from;
    const int64_t most = v == runs - 1 ? left : left - (runs - 1 - v);
    const int64_t least = v == runs - 1 ? left : 1;
    for (int64_t count = least; count <= most; ++count) {
      int64_t start = 0;
      for (size_t k = 0; k < stacks; ++k) {
        const int64_t end = start + problem.stacks[k].layers;
        layers[k][static_cast<size_t>(v)] =
            std::max<int64_t>(0, std::min(end, from + count) - std::max(start, from));
        start = end;
      }
      if (v == runs - 1) {
        if (problem.chunks() == 1 || balanced()) chooseRecompute(0);
      } else {
        chooseLayers(v + 1, from + count);
      }
    }
  };
  chooseLayers(0, 0);
  if (best.layers.empty()) return Error{"no placement fits"};
  return best;
}

}  // namespace autopar::search
