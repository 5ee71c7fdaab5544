#include "search/op_level/edge_cost.h"

#include <algorithm>

namespace autopar::search {

Expected<EdgeCostCache::Cost> EdgeCostCache::lookup(const layout::TensorLayout& from,
                                                    const layout::TensorLayout& to,
                                                    int64_t elementBytes) {
  if (from == to) return Cost{};
  if (const Cost* found = cache_.find(from, to, elementBytes)) return *found;
  auto plan = layout::redistribute(from, to, cluster_, elementBytes, options_);
  if (!plan) return plan.error();
  const Cost cost{plan->seconds, plan->bytesPerDevice};
  cache_.insert(from, to, elementBytes, cost);
  return cost;
}

Expected<double> EdgeCostCache::seconds(const layout::TensorLayout& from,
                                        const layout::TensorLayout& to, int64_t elementBytes) {
  auto cost = lookup(from, to, elementBytes);
  if (!cost) return cost.error();
  return cost->seconds;
}

Expected<int64_t> EdgeCostCache::bytesPerDevice(const layout::TensorLayout& from,
                                                const layout::TensorLayout& to,
                                                int64_t elementBytes) {
  auto cost = lookup(from, to, elementBytes);
  if (!cost) return cost.error();
  return cost->bytesPerDevice;
}

Expected<double> EdgeCostCache::edgeSeconds(const layout::TensorLayout& produced,
                                            const layout::TensorLayout& consumed,
                                            const std::vector<int>& gradPartialAxes,
                                            int64_t elementBytes, bool hasGradient) {
  if (!hasGradient) return seconds(produced, consumed, elementBytes);
  // Both directions under one key, so a repeated edge neither looks up twice nor copies the
  // layouts to make the gradient's: the element size, the gradient's partial axes as a bit set.
  if (elementBytes < 0 || elementBytes >= (int64_t{1} << kElementBytesBits)) {
    return unkeyedEdgeSeconds(produced, consumed, gradPartialAxes, elementBytes);
  }
  uint64_t partial = 0;
  for (int axis : gradPartialAxes) {
    if (axis < 0 || axis >= kMaxKeyedAxes) {
      return unkeyedEdgeSeconds(produced, consumed, gradPartialAxes, elementBytes);
    }
    partial |= uint64_t{1} << axis;
  }
  const auto key =
      static_cast<int64_t>((partial << kElementBytesBits) | static_cast<uint64_t>(elementBytes));
  if (const double* found = edges_.find(produced, consumed, key)) return *found;
  auto both = unkeyedEdgeSeconds(produced, consumed, gradPartialAxes, elementBytes);
  if (!both) return both;
  edges_.insert(produced, consumed, key, *both);
  return both;
}

Expected<double> EdgeCostCache::unkeyedEdgeSeconds(const layout::TensorLayout& produced,
                                                   const layout::TensorLayout& consumed,
                                                   const std::vector<int>& gradPartialAxes,
                                                   int64_t elementBytes) {
  auto forward = seconds(produced, consumed, elementBytes);
  if (!forward) return forward;
  layout::TensorLayout gradient = consumed.withoutPartial();
  gradient.partialAxes = gradPartialAxes;
  std::sort(gradient.partialAxes.begin(), gradient.partialAxes.end());
  auto backward = seconds(gradient, produced.withoutPartial(), elementBytes);
  if (!backward) return backward;
  return *forward + *backward;
}

}  // namespace autopar::search
