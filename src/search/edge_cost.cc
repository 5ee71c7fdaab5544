#include "search/edge_cost.h"

#include <algorithm>

namespace autopar::search {

Expected<double> EdgeCostCache::seconds(const layout::TensorLayout& from,
                                        const layout::TensorLayout& to, int64_t elementBytes) {
  if (from == to) return 0.0;
  std::string key = from.toString();
  key += '|';
  key += to.toString();
  key += '|';
  key += std::to_string(elementBytes);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  auto plan = layout::redistribute(from, to, cluster_, elementBytes, options_);
  if (!plan) return plan.error();
  cache_.emplace(std::move(key), plan->seconds);
  return plan->seconds;
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
