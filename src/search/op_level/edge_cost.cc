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
  auto forward = seconds(produced, consumed, elementBytes);
  if (!forward || !hasGradient) return forward;
  layout::TensorLayout gradient = consumed.withoutPartial();
  gradient.partialAxes = gradPartialAxes;
  std::sort(gradient.partialAxes.begin(), gradient.partialAxes.end());
  auto backward = seconds(gradient, produced.withoutPartial(), elementBytes);
  if (!backward) return backward;
  return *forward + *backward;
}

}  // namespace autopar::search
