#include "layout/redistribution_cache.h"

#include <functional>

#include "util/hash.h"

namespace autopar::layout {

using util::hashCombine;
using util::hashCombineAll;

size_t hashLayout(const TensorLayout& layout) {
  size_t seed = 0;
  hashCombineAll(seed, layout.shape);
  hashCombine(seed, layout.dimAxes.size());
  for (const auto& axes : layout.dimAxes) hashCombineAll(seed, axes);
  hashCombineAll(seed, layout.partialAxes);
  hashCombineAll(seed, layout.deviceMatrix.shape());
  const std::vector<int>& ranks = layout.deviceMatrix.ranks();
  hashCombine(seed, ranks.size());
  if (!ranks.empty()) {
    hashCombine(seed, static_cast<size_t>(ranks.front()));
    hashCombine(seed, static_cast<size_t>(ranks.back()));
  }
  return seed;
}

size_t LayoutPairKeyHash::operator()(const LayoutPairKey& key) const {
  size_t seed = hashLayout(*key.from);
  hashCombine(seed, hashLayout(*key.to));
  hashCombine(seed, static_cast<size_t>(key.elementBytes));
  return seed;
}

Expected<Redistribution> RedistributionCache::plan(const TensorLayout& from, const TensorLayout& to,
                                                   int64_t elementBytes) {
  if (const Redistribution* found = plans_.find(from, to, elementBytes)) return *found;
  auto result = redistribute(from, to, cluster_, elementBytes, options_);
  if (!result) return result;
  plans_.insert(from, to, elementBytes, *result);
  return result;
}

}  // namespace autopar::layout
