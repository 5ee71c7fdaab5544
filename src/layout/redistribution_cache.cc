#include "layout/redistribution_cache.h"

#include <functional>

namespace autopar::layout {

namespace {

/// boost::hash_combine's mixing step (the 64-bit golden-ratio constant); written here to avoid a
/// Boost dependency for one line.
void combine(size_t& seed, size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

template <class T>
void combineAll(size_t& seed, const std::vector<T>& values) {
  combine(seed, values.size());
  for (const T& value : values) combine(seed, std::hash<T>{}(value));
}

}  // namespace

size_t hashLayout(const TensorLayout& layout) {
  size_t seed = 0;
  combineAll(seed, layout.shape);
  combine(seed, layout.dimAxes.size());
  for (const auto& axes : layout.dimAxes) combineAll(seed, axes);
  combineAll(seed, layout.partialAxes);
  combineAll(seed, layout.deviceMatrix.shape());
  const std::vector<int>& ranks = layout.deviceMatrix.ranks();
  combine(seed, ranks.size());
  if (!ranks.empty()) {
    combine(seed, static_cast<size_t>(ranks.front()));
    combine(seed, static_cast<size_t>(ranks.back()));
  }
  return seed;
}

size_t RedistributionCache::KeyHash::operator()(const Key& key) const {
  size_t seed = hashLayout(*key.from);
  combine(seed, hashLayout(*key.to));
  combine(seed, static_cast<size_t>(key.elementBytes));
  return seed;
}

Expected<Redistribution> RedistributionCache::plan(const TensorLayout& from, const TensorLayout& to,
                                                   int64_t elementBytes) {
  if (auto found = plans_.find(Key{&from, &to, elementBytes}); found != plans_.end()) {
    return found->second;
  }
  auto result = redistribute(from, to, cluster_, elementBytes, options_);
  if (!result) return result;
  const Entry& stored = entries_.emplace_back(Entry{from, to});
  plans_.emplace(Key{&stored.from, &stored.to, elementBytes}, *result);
  return result;
}

}  // namespace autopar::layout
