#pragma once
/// \file
/// TensorLayout = device matrix + tensor map + shape (+ partial-sum axes), as in seed 002.
///
/// `dimAxes[d]` lists the device-matrix axes (0 = outermost) that split tensor dim d, major
/// first; an empty list means dim d is not split. `partialAxes` lists axes over which each device
/// holds a partial sum: the true value is the sum over devices that differ only on those axes.
/// An axis is used at most once across dimAxes and partialAxes; axes used nowhere replicate.
///
/// The seeds' tensor map writes one entry per dim and counts axes from the right (MindSpore's
/// convention): for MatMul ((2,1),(1,4)) the device matrix is [2,4]; X [64,32] has dimAxes
/// {{0},{}} and tensor map [1,-1]; W [32,128] has dimAxes {{},{1}} and tensor map [-1,0].
/// Device 5 = coordinate (1,1) holds X rows 32..63 and W columns 32..63.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "layout/device_matrix.h"
#include "util/expected.h"

namespace autopar::layout {

struct TensorLayout {
  DeviceMatrix deviceMatrix;
  std::vector<std::vector<int>> dimAxes;
  std::vector<int> partialAxes;  ///< kept sorted
  ir::Shape shape;

  /// Checks ranks, axis ranges, that no axis is used twice, and that every dim's size divides by
  /// the product of its axes. The message names the dim, e.g. "dim 1 of size 30 does not divide
  /// into 4 parts".
  [[nodiscard]] Status validate() const;

  /// The seeds' tensor map (right-to-left axis numbering, -1 = not split). Only defined when no
  /// dim is split by more than one axis; a dim with several axes gives its major axis.
  [[nodiscard]] std::vector<int64_t> tensorMap() const;

  /// Number of parts dim d is cut into.
  [[nodiscard]] int64_t cutsOfDim(int dim) const;
  /// Shape of each device's local slice.
  [[nodiscard]] ir::Shape sliceShape() const;
  /// Elements in each device's local slice.
  [[nodiscard]] int64_t sliceElements() const;
  /// Half-open [lo, hi) per dim of the slice held by the device at mesh position `index`.
  [[nodiscard]] std::vector<std::pair<int64_t, int64_t>> sliceRanges(int64_t index) const;

  /// Device-matrix axes (longer than 1) that neither split a dim nor hold a partial sum: the
  /// devices along them hold the same values.
  [[nodiscard]] std::vector<int> replicaAxes() const;

  /// The same layout with no partial sums.
  [[nodiscard]] TensorLayout withoutPartial() const;
  /// Fully replicated on a mesh.
  static TensorLayout replicated(const DeviceMatrix& mesh, ir::Shape shape);
  /// Builds from a seeds'-convention tensor map (right-to-left axis numbering, -1 = none).
  static Expected<TensorLayout> fromTensorMap(const DeviceMatrix& mesh,
                                              const std::vector<int64_t>& tensorMap,
                                              ir::Shape shape);

  /// "{matrix=[2,4] map=[1,-1] shape=[64,32]}" with " partial=[..]" when partial; dims split by
  /// several axes print as (a,b). Partial axes use the map's right-to-left numbering, ascending;
  /// " ranks=[..]" follows the matrix when its ranks are not 0..n-1.
  [[nodiscard]] std::string toString() const;

  bool operator==(const TensorLayout&) const = default;
};

}  // namespace autopar::layout
