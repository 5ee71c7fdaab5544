#pragma once

/// \file
/// Memoised redistribution plans for one evaluation of a plan. A transformer repeats its layers,
/// so the same (source, target, element size) pair recurs once per layer: a 1,000-layer model
/// asks for a few dozen distinct plans thousands of times. redistribute() is a pure function of
/// the two layouts, the element size, the cluster and the options, so the cache holds one
/// cluster and one set of options and keys on the rest.

#include <cstdint>
#include <deque>
#include <unordered_map>

#include "layout/redistribution.h"

namespace autopar::layout {

class RedistributionCache {
 public:
  RedistributionCache(const cluster::Cluster& cluster, RedistributionOptions options)
      : cluster_(cluster), options_(options) {}

  /// redistribute(from, to, cluster, elementBytes, options), computed once per distinct key.
  /// Errors are not cached (the caller stops at the first).
  Expected<Redistribution> plan(const TensorLayout& from, const TensorLayout& to,
                                int64_t elementBytes);

 private:
  /// Points at the caller's layouts for a lookup and at `entries_` once stored.
  struct Key {
    const TensorLayout* from;
    const TensorLayout* to;
    int64_t elementBytes;
    bool operator==(const Key& other) const {
      return elementBytes == other.elementBytes && *from == *other.from && *to == *other.to;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  struct Entry {
    TensorLayout from;
    TensorLayout to;
  };

  const cluster::Cluster& cluster_;
  RedistributionOptions options_;
  std::deque<Entry> entries_;  ///< stable addresses for the keys
  std::unordered_map<Key, Redistribution, KeyHash> plans_;
};

/// A hash of everything TensorLayout::operator== compares; the mesh's ranks by their count and
/// ends (equality compares them all).
size_t hashLayout(const TensorLayout& layout);

}  // namespace autopar::layout
