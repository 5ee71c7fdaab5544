#pragma once
/// \file
/// Combining hashes of several values into one, for the caches keyed by layouts and op types.

#include <cstddef>
#include <functional>
#include <vector>

namespace autopar::util {

/// boost::hash_combine's mixing step (the 64-bit golden-ratio constant); written here to avoid a
/// Boost dependency for one line.
inline void hashCombine(size_t& seed, size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

/// Mixes in the size of `values` and each value's std::hash.
template <class T>
void hashCombineAll(size_t& seed, const std::vector<T>& values) {
  hashCombine(seed, values.size());
  for (const T& value : values) hashCombine(seed, std::hash<T>{}(value));
}

}  // namespace autopar::util
