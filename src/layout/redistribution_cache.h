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
#include <utility>

#include "layout/redistribution.h"

namespace autopar::layout {

/// The key of a memo on (source layout, target layout, element size): it points at the caller's
/// layouts for a lookup and at the memo's own copies (LayoutPairStore) once stored, so a lookup
/// neither copies nor formats a layout.
struct LayoutPairKey {
  const TensorLayout* from;
  const TensorLayout* to;
  int64_t elementBytes;
  bool operator==(const LayoutPairKey& other) const {
    return elementBytes == other.elementBytes && *from == *other.from && *to == *other.to;
  }
};
struct LayoutPairKeyHash {
  size_t operator()(const LayoutPairKey& key) const;
};

/// A memo from layout pairs to `Value`, for one cluster and one set of options.
template <class Value>
class LayoutPairMemo {
 public:
  const Value* find(const TensorLayout& from, const TensorLayout& to, int64_t elementBytes) const {
    auto found = values_.find(LayoutPairKey{&from, &to, elementBytes});
    return found == values_.end() ? nullptr : &found->second;
  }
  void insert(const TensorLayout& from, const TensorLayout& to, int64_t elementBytes, Value value) {
    const auto& stored = layouts_.emplace_back(from, to);
    values_.emplace(LayoutPairKey{&stored.first, &stored.second, elementBytes}, std::move(value));
  }

 private:
  std::deque<std::pair<TensorLayout, TensorLayout>> layouts_;  ///< stable addresses for the keys
  std::unordered_map<LayoutPairKey, Value, LayoutPairKeyHash> values_;
};

class RedistributionCache {
 public:
  RedistributionCache(const cluster::Cluster& cluster, RedistributionOptions options)
      : cluster_(cluster), options_(options) {}

  /// redistribute(from, to, cluster, elementBytes, options), computed once per distinct key.
  /// Errors are not cached (the caller stops at the first).
  Expected<Redistribution> plan(const TensorLayout& from, const TensorLayout& to,
                                int64_t elementBytes);

 private:
  const cluster::Cluster& cluster_;
  RedistributionOptions options_;
  LayoutPairMemo<Redistribution> plans_;
};

/// A hash of everything TensorLayout::operator== compares; the mesh's ranks by their count and
/// ends (equality compares them all).
size_t hashLayout(const TensorLayout& layout);

}  // namespace autopar::layout
