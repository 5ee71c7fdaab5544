#pragma once
/// \file
/// Test-only reference interpreter for redistributions. It materialises every device's shard of a
/// small int64 tensor, runs RedistSteps on them as the collectives would, and compares the result
/// with the target layout. It computes slices from coordinates itself rather than through
/// TensorLayout::sliceRanges, so it checks that code too.
///
/// A layout with partial axes is materialised so that, within each partial group (devices that
/// differ only on partial axes), the device at coordinate 0 on every partial axis holds the true
/// value minus the sum of the pseudo-random values the others hold.

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "layout/redistribution.h"
#include "layout/tensor_layout.h"

namespace autopar::layout::testing {

/// One device's local data, row-major.
struct Shard {
  ir::Shape shape;
  std::vector<int64_t> values;
  bool operator==(const Shard&) const = default;
};

/// Every device's shard, by physical rank.
using DeviceShards = std::map<int, Shard>;

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

inline int64_t elementCount(const ir::Shape& shape) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

/// A tensor of `shape` filled with pseudo-random values in [-1000, 1000].
inline Shard randomTensor(const ir::Shape& shape, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> value(-1000, 1000);
  Shard tensor{shape, std::vector<int64_t>(static_cast<size_t>(elementCount(shape)))};
  for (int64_t& element : tensor.values) element = value(rng);
  return tensor;
}

/// The block of `layout.shape` held by the device at mesh position `index`: each dim's axes are a
/// mixed-radix part number, major axis first.
inline Ranges referenceRanges(const TensorLayout& layout, int64_t index) {
  const std::vector<int64_t> coord = layout.deviceMatrix.coordinate(index);
  Ranges ranges;
  for (size_t dim = 0; dim < layout.shape.size(); ++dim) {
    int64_t part = 0;
    int64_t parts = 1;
    for (int axis : layout.dimAxes[dim]) {
      part = part * layout.deviceMatrix.axisSize(axis) + coord[static_cast<size_t>(axis)];
      parts *= layout.deviceMatrix.axisSize(axis);
    }
    const int64_t size = layout.shape[dim] / parts;
    ranges.emplace_back(part * size, (part + 1) * size);
  }
  return ranges;
}

/// Row-major strides of a shape.
inline std::vector<int64_t> stridesOf(const ir::Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t dim = shape.size(); dim-- > 1;) strides[dim - 1] = strides[dim] * shape[dim];
  return strides;
}

/// The sub-block of `tensor` given by half-open ranges per dim.
inline Shard sliceOf(const Shard& tensor, const Ranges& ranges) {
  Shard slice;
  for (const auto& [lo, hi] : ranges) slice.shape.push_back(hi - lo);
  const std::vector<int64_t> strides = stridesOf(tensor.shape);
  const int64_t count = elementCount(slice.shape);
  slice.values.reserve(static_cast<size_t>(count));
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat;
    int64_t source = 0;
    for (size_t dim = slice.shape.size(); dim-- > 0;) {
      source += (ranges[dim].first + rest % slice.shape[dim]) * strides[dim];
      rest /= slice.shape[dim];
    }
    slice.values.push_back(tensor.values[static_cast<size_t>(source)]);
  }
  return slice;
}

/// Elements before `dim` (outer) and from `dim` on (block), for row-major concat and split.
inline std::pair<int64_t, int64_t> outerAndBlock(const ir::Shape& shape, int dim) {
  int64_t outer = 1;
  for (int d = 0; d < dim; ++d) outer *= shape[static_cast<size_t>(d)];
  return {outer, elementCount(shape) / std::max<int64_t>(outer, 1)};
}

/// Concatenates shards of equal shape along `dim`, in order.
inline Shard concat(const std::vector<Shard>& parts, int dim) {
  Shard result{parts.front().shape, {}};
  for (const Shard& part : parts) {
    if (part.shape != parts.front().shape) throw std::runtime_error("concat of unequal shards");
  }
  result.shape[static_cast<size_t>(dim)] *= static_cast<int64_t>(parts.size());
  const auto [outer, block] = outerAndBlock(parts.front().shape, dim);
  for (int64_t o = 0; o < outer; ++o) {
    for (const Shard& part : parts) {
      auto begin = part.values.begin() + o * block;
      result.values.insert(result.values.end(), begin, begin + block);
    }
  }
  return result;
}

/// Part `index` of `numParts` equal parts of `shard` along `dim`.
inline Shard partOf(const Shard& shard, int dim, int64_t numParts, int64_t index) {
  if (shard.shape[static_cast<size_t>(dim)] % numParts != 0) {
    throw std::runtime_error("split of dim " + std::to_string(dim) + " of size " +
                             std::to_string(shard.shape[static_cast<size_t>(dim)]) + " into " +
                             std::to_string(numParts) + " parts");
  }
  Shard result{shard.shape, {}};
  result.shape[static_cast<size_t>(dim)] /= numParts;
  const auto [outer, block] = outerAndBlock(shard.shape, dim);
  const int64_t partBlock = block / numParts;
  for (int64_t o = 0; o < outer; ++o) {
    auto begin = shard.values.begin() + o * block + index * partBlock;
    result.values.insert(result.values.end(), begin, begin + partBlock);
  }
  return result;
}

inline Shard sum(const std::vector<Shard>& shards) {
  Shard result = shards.front();
  for (size_t i = 1; i < shards.size(); ++i) {
    if (shards[i].shape != result.shape) throw std::runtime_error("sum of unequal shards");
    for (size_t e = 0; e < result.values.size(); ++e) result.values[e] += shards[i].values[e];
  }
  return result;
}

/// Every device's shard of `full` in `layout`; see the file comment for partial axes.
inline DeviceShards materialise(const Shard& full, const TensorLayout& layout,
                                std::mt19937_64& rng) {
  const DeviceMatrix& matrix = layout.deviceMatrix;
  DeviceShards shards;
  std::vector<int64_t> leaders;
  for (int64_t index = 0; index < matrix.numDevices(); ++index) {
    const std::vector<int64_t> coord = matrix.coordinate(index);
    const bool isLeader = std::all_of(layout.partialAxes.begin(), layout.partialAxes.end(),
                                      [&](int axis) { return coord[axis] == 0; });
    const Shard slice = sliceOf(full, referenceRanges(layout, index));
    const int rank = matrix.ranks()[static_cast<size_t>(index)];
    shards[rank] = isLeader ? slice : randomTensor(slice.shape, rng);
    if (isLeader) leaders.push_back(index);
  }
  for (int64_t leader : leaders) {
    Shard& leaderShard = shards[matrix.ranks()[static_cast<size_t>(leader)]];
    for (int member : matrix.group(leader, layout.partialAxes)) {
      if (member == matrix.ranks()[static_cast<size_t>(leader)]) continue;
      for (size_t e = 0; e < leaderShard.values.size(); ++e) {
        leaderShard.values[e] -= shards[member].values[e];
      }
    }
  }
  return shards;
}

inline int64_t positionOf(const DeviceMatrix& matrix, int rank) {
  const auto& ranks = matrix.ranks();
  const auto it = std::find(ranks.begin(), ranks.end(), rank);
  if (it == ranks.end())
    throw std::runtime_error("rank " + std::to_string(rank) + " not in matrix");
  return it - ranks.begin();
}

/// The new shard of the device at `index` after `step`, from the shards before it.
inline Shard stepResult(const DeviceShards& before, const RedistStep& step, int64_t index) {
  const DeviceMatrix& matrix = step.matrix;
  const int axes[] = {step.axis};
  std::vector<Shard> groupShards;
  for (int member : matrix.group(index, axes)) groupShards.push_back(before.at(member));
  const int64_t groupSize = matrix.axisSize(step.axis);
  const int64_t coord = matrix.coordinate(index)[static_cast<size_t>(step.axis)];
  const Shard& own = before.at(matrix.ranks()[static_cast<size_t>(index)]);
  switch (step.kind) {
    case PrimitiveKind::kSplit:
      return partOf(own, step.dim, groupSize, coord);
    case PrimitiveKind::kAllGather:
      return concat(groupShards, step.dim);
    case PrimitiveKind::kAllToAll: {
      // Member g sends its chunk `coord` of splitDim; chunks are stacked along dim in group order.
      std::vector<Shard> received;
      for (const Shard& shard : groupShards) {
        received.push_back(partOf(shard, step.splitDim, groupSize, coord));
      }
      return concat(received, step.dim);
    }
    case PrimitiveKind::kReduceScatter:
      return partOf(sum(groupShards), step.dim, groupSize, coord);
    case PrimitiveKind::kAllReduce:
      return sum(groupShards);
    case PrimitiveKind::kMakePartial: {
      if (coord == 0) return own;
      return Shard{own.shape, std::vector<int64_t>(own.values.size(), 0)};
    }
  }
  throw std::runtime_error("unknown primitive");
}

/// Runs `steps` in order; every device of a step's matrix acts at once.
inline DeviceShards execute(DeviceShards shards, const std::vector<RedistStep>& steps) {
  for (const RedistStep& step : steps) {
    DeviceShards after;
    for (int64_t index = 0; index < step.matrix.numDevices(); ++index) {
      after[step.matrix.ranks()[static_cast<size_t>(index)]] = stepResult(shards, step, index);
    }
    shards = std::move(after);
  }
  return shards;
}

/// "" when `shards` hold `full` in `target`, else the first mismatch. Without partial axes every
/// shard must equal its slice. With them, each partial group must sum to its slice; when
/// `exactPartials` (the source had no partial sums, so the partials come from make-partial) the
/// device at coordinate 0 on every partial axis must hold the slice and the others zeros.
inline std::string compareWithTarget(const DeviceShards& shards, const Shard& full,
                                     const TensorLayout& target, bool exactPartials) {
  const DeviceMatrix& matrix = target.deviceMatrix;
  for (int64_t index = 0; index < matrix.numDevices(); ++index) {
    const int rank = matrix.ranks()[static_cast<size_t>(index)];
    const Shard expected = sliceOf(full, referenceRanges(target, index));
    const std::vector<int64_t> coord = matrix.coordinate(index);
    const bool isLeader = std::all_of(target.partialAxes.begin(), target.partialAxes.end(),
                                      [&](int axis) { return coord[axis] == 0; });
    Shard actual = shards.at(rank);
    if (!target.partialAxes.empty() && !exactPartials) {
      std::vector<Shard> group;
      for (int member : matrix.group(index, target.partialAxes)) group.push_back(shards.at(member));
      actual = sum(group);
    } else if (!isLeader) {
      actual = Shard{expected.shape, std::vector<int64_t>(expected.values.size(), 0)};
      if (shards.at(rank) != actual) return "rank " + std::to_string(rank) + " is not zeroed";
      continue;
    }
    if (actual != expected) {
      return "rank " + std::to_string(rank) + " does not hold its target slice";
    }
  }
  return "";
}

}  // namespace autopar::layout::testing
