#pragma once
/// \file
/// A logical device matrix over physical ranks (the seeds' "device matrix"). Ranks are laid out
/// row-major: the last axis varies fastest, so inner axes map to consecutive ranks and hence to
/// the fastest link level.
///
/// Example: shape [2,4] over ranks 0..7. Device index 5 has coordinate (1,1). The group along
/// axis 1 through device 5 is ranks {4,5,6,7}; along axis 0 it is {1,5}.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cluster/cluster.h"

namespace autopar::cluster {

class Mesh {
 public:
  Mesh() = default;
  /// `ranks.size()` must equal the product of `shape`.
  Mesh(std::vector<int64_t> shape, const std::vector<int>& ranks);
  /// Shape over ranks 0..product-1.
  explicit Mesh(std::vector<int64_t> shape);

  [[nodiscard]] const std::vector<int64_t>& shape() const { return shape_; }
  [[nodiscard]] const std::vector<int>& ranks() const;
  /// True when the ranks are 0..numDevices()-1 in order.
  [[nodiscard]] bool hasDefaultRanks() const { return defaultRanks_; }
  [[nodiscard]] int numAxes() const { return static_cast<int>(shape_.size()); }
  [[nodiscard]] int64_t axisSize(int axis) const { return shape_.at(axis); }
  [[nodiscard]] int64_t numDevices() const { return static_cast<int64_t>(ranks().size()); }

  /// The position of `rank` among the ranks(); -1 when the mesh does not hold it.
  [[nodiscard]] int64_t positionOf(int rank) const;
  /// Coordinate of the device at position `index` (0 <= index < numDevices()).
  [[nodiscard]] std::vector<int64_t> coordinate(int64_t index) const;
  /// Position of a coordinate.
  [[nodiscard]] int64_t indexOf(std::span<const int64_t> coordinate) const;

  /// Ranks that differ from device `index` only along `axes`, ordered row-major over those axes.
  [[nodiscard]] std::vector<int> group(int64_t index, std::span<const int> axes) const;
  /// All distinct groups along `axes`, each ordered as group() orders it, sorted by first member.
  [[nodiscard]] std::vector<std::vector<int>> groups(std::span<const int> axes) const;

  /// The outermost link level a group along `axes` crosses, for a given cluster.
  [[nodiscard]] int levelOf(const Cluster& cluster, std::span<const int> axes) const;

  bool operator==(const Mesh& other) const;

 private:
  std::vector<int64_t> shape_;
  /// Shared: layouts copy their mesh often, and a mesh over thousands of devices should not copy
  /// its rank list each time. The list is never modified after construction.
  std::shared_ptr<const std::vector<int>> ranks_;
  bool defaultRanks_ = true;
};

}  // namespace autopar::cluster
