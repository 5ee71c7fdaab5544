#include "search/hybrid.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace autopar::search {

namespace {

/// The memory savers in the order they add time.
struct Rung {
  const char* recompute;
  int zero;
};
constexpr Rung kLadder[] = {{"none", 0}, {"none", 1}, {"selective", 1},
                            {"full", 1}, {"full", 2}, {"full", 3}};

bool divides(int64_t divisor, int64_t value) { return divisor > 0 && value % divisor == 0; }

bool tensorParallelFits(const HybridModel& model, const HybridSpace& space, int64_t tp) {
  return divides(tp, space.devicesPerNode) && divides(tp, model.heads) &&
         divides(tp, model.kvHeads) && divides(tp, model.ffn) && divides(tp, model.vocab);
}

}  // namespace

std::vector<HybridCandidate> hybridShapes(const HybridModel& model, const HybridSpace& space) {
  std::vector<HybridCandidate> shapes;
  for (int64_t tp = 1; tp <= space.world; tp *= 2) {
    if (!divides(tp, space.world) || !tensorParallelFits(model, space, tp)) continue;
    for (int64_t pp = 1; pp * tp <= space.world; ++pp) {
      if (!divides(pp * tp, space.world) || pp > model.layers) continue;
      const int64_t dp = space.world / (pp * tp);
      for (int64_t vpp = 1; vpp <= (pp > 1 ? space.maxVirtualStages : 1); ++vpp) {
        // Interleaving needs the layers to split evenly into PP x VPP chunks (Megatron-LM).
        if (pp * vpp > model.layers || (vpp > 1 && !divides(pp * vpp, model.layers))) continue;
        for (int64_t mbs : space.microBatchSizes) {
          if (!divides(dp * mbs, space.globalBatch)) continue;
          const int64_t microBatches = space.globalBatch / (dp * mbs);
          if (microBatches < pp || (vpp > 1 && !divides(pp, microBatches))) continue;
          HybridCandidate shape;
          shape.tp = tp;
          shape.pp = pp;
          shape.dp = dp;
          shape.vpp = vpp;
          shape.mbs = mbs;
          shape.sequenceParallel = tp > 1 && divides(tp, model.seq);
          shapes.push_back(shape);
        }
      }
    }
  }
  return shapes;
}

Expected<HybridResult> searchHybrid(const HybridModel& model, const HybridSpace& space,
                                    const HybridEvaluator& evaluate,
                                    const HybridProgress& progress) {
  HybridResult result;
  const std::vector<HybridCandidate> shapes = hybridShapes(model, space);
  result.shapes = static_cast<int>(shapes.size());
  if (shapes.empty()) {
    return Error{fmt::format(
        "no parallel shape fits {} devices ({} per node) with global batch {}: TP must divide the "
        "node, the heads ({}), key/value heads ({}), MLP width ({}) and vocabulary ({}), and the "
        "global batch must divide into DP x micro-batch size",
        space.world, space.devicesPerNode, space.globalBatch, model.heads, model.kvHeads, model.ffn,
        model.vocab)};
  }
  const int bound = static_cast<int>(shapes.size() * std::size(kLadder));
  bool scored = false;
  std::optional<Error> firstError;
  for (const HybridCandidate& shape : shapes) {
    for (const Rung& rung : kLadder) {
      HybridCandidate candidate = shape;
      // ZeRO shards over data parallelism: with DP 1 its rungs repeat ZeRO 0. ZeRO 2 and 3 do
      // not combine with pipelining in Megatron-LM or DeepSpeed.
      if (rung.zero > 0 && candidate.dp == 1) continue;
      if (rung.zero >= 2 && candidate.pp > 1) continue;
      candidate.recompute = rung.recompute;
      candidate.zero = rung.zero;
      auto score = evaluate(candidate);
      ++result.evaluations;
      if (progress) progress(result.evaluations, bound);
      if (!score) {  // the builder rejects this shape; no rung changes that
        if (!firstError) firstError = score.error();
        break;
      }
      if (!scored || score->peakBytes < result.leanest.second.peakBytes) {
        result.leanest = {candidate, *score};
        scored = true;
      }
      if (score->fits) {
        result.ranked.emplace_back(candidate, *score);
        break;
      }
    }
  }
  if (!scored && firstError) return firstError->in("every candidate failed; the first");
  // Entries were added in enumeration order, which the stable sort keeps among equals.
  std::stable_sort(result.ranked.begin(), result.ranked.end(), [](const auto& a, const auto& b) {
    if (a.second.stepSeconds != b.second.stepSeconds) {
      return a.second.stepSeconds < b.second.stepSeconds;
    }
    return a.first.tp * a.first.pp < b.first.tp * b.first.pp;
  });
  return result;
}

}  // namespace autopar::search
