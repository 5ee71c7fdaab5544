#pragma once
/// \file
/// Redistribution cost between the layouts two neighbouring ops want for one tensor, in both
/// directions, memoised: transformer layers repeat, so the same layout pairs recur many times.

#include <vector>

#include "cluster/cluster.h"
#include "layout/redistribution.h"
#include "layout/redistribution_cache.h"
#include "util/expected.h"

namespace autopar::search {

class EdgeCostCache {
 public:
  EdgeCostCache(const cluster::Cluster& cluster, layout::RedistributionOptions options)
      : cluster_(cluster), options_(options) {}

  /// Seconds to redistribute a tensor of `elementBytes`-byte elements from `from` to `to`.
  Expected<double> seconds(const layout::TensorLayout& from, const layout::TensorLayout& to,
                           int64_t elementBytes);
  /// Bytes each device sends for the same redistribution.
  Expected<int64_t> bytesPerDevice(const layout::TensorLayout& from, const layout::TensorLayout& to,
                                   int64_t elementBytes);

  /// Forward (producer output -> consumer input) plus, for a floating tensor, backward (the
  /// consumer's gradient, partial over `gradPartialAxes`, back to the producer's layout without
  /// partial sums).
  Expected<double> edgeSeconds(const layout::TensorLayout& produced,
                               const layout::TensorLayout& consumed,
                               const std::vector<int>& gradPartialAxes, int64_t elementBytes,
                               bool hasGradient);

 private:
  const cluster::Cluster& cluster_;
  layout::RedistributionOptions options_;
  struct Cost {
    double seconds = 0;
    int64_t bytesPerDevice = 0;
  };
  Expected<Cost> lookup(const layout::TensorLayout& from, const layout::TensorLayout& to,
                        int64_t elementBytes);

  /// edgeSeconds' two directions, without the memo of both.
  Expected<double> unkeyedEdgeSeconds(const layout::TensorLayout& produced,
                                      const layout::TensorLayout& consumed,
                                      const std::vector<int>& gradPartialAxes,
                                      int64_t elementBytes);

  /// edgeSeconds' memo keys the element size in its low bits and the gradient's partial mesh
  /// axes above them; larger sizes or axes go unmemoised.
  static constexpr int kElementBytesBits = 16;
  static constexpr int kMaxKeyedAxes = 40;

  layout::LayoutPairMemo<Cost> cache_;
  layout::LayoutPairMemo<double> edges_;  ///< edgeSeconds with a gradient, both directions
};

}  // namespace autopar::search
