#include "cluster/mesh.h"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <set>

namespace autopar::cluster {

namespace {
std::vector<int> iota(int64_t count) {
  std::vector<int> ranks(static_cast<size_t>(count));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}
int64_t product(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}
bool isIota(const std::vector<int>& ranks) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] != static_cast<int>(i)) return false;
  }
  return true;
}
/// The searches build a mesh per candidate strategy over the same ranks: this thread's last rank
/// list is shared rather than copied, so meshes over it compare by pointer (a 1,024-rank list is
/// otherwise copied at each build and compared element by element at each layout lookup).
struct SharedRanks {
  std::shared_ptr<const std::vector<int>> ranks;
  bool iota = false;
};
const SharedRanks& sharedRanks(const std::vector<int>& ranks) {
  thread_local SharedRanks last;
  if (!last.ranks || *last.ranks != ranks) {
    last.iota = isIota(ranks);
    last.ranks = std::make_shared<const std::vector<int>>(ranks);
  }
  return last;
}
}  // namespace

Mesh::Mesh(std::vector<int64_t> shape, const std::vector<int>& ranks) : shape_(std::move(shape)) {
  const SharedRanks& shared = sharedRanks(ranks);
  ranks_ = shared.ranks;
  defaultRanks_ = shared.iota;
  assert(static_cast<int64_t>(ranks_->size()) == product(shape_));
}

Mesh::Mesh(std::vector<int64_t> shape)
    : shape_(std::move(shape)),
      ranks_(std::make_shared<const std::vector<int>>(iota(product(shape_)))) {}

const std::vector<int>& Mesh::ranks() const {
  static const std::vector<int> kNoRanks;
  return ranks_ ? *ranks_ : kNoRanks;
}

int64_t Mesh::positionOf(int rank) const {
  const std::vector<int>& all = ranks();
  const auto at = std::find(all.begin(), all.end(), rank);
  return at == all.end() ? -1 : static_cast<int64_t>(at - all.begin());
}

bool Mesh::operator==(const Mesh& other) const {
  if (shape_ != other.shape_) return false;
  if (ranks_ == other.ranks_) return true;
  return ranks() == other.ranks();
}

std::vector<int64_t> Mesh::coordinate(int64_t index) const {
  std::vector<int64_t> coord(shape_.size());
  for (int axis = numAxes() - 1; axis >= 0; --axis) {
    coord[axis] = index % shape_[axis];
    index /= shape_[axis];
  }
  return coord;
}

int64_t Mesh::indexOf(std::span<const int64_t> coordinate) const {
  int64_t index = 0;
  for (int axis = 0; axis < numAxes(); ++axis) index = index * shape_[axis] + coordinate[axis];
  return index;
}

std::vector<int> Mesh::group(int64_t index, std::span<const int> axes) const {
  std::vector<int64_t> coord = coordinate(index);
  int64_t groupSize = 1;
  for (int axis : axes) groupSize *= shape_[axis];
  std::vector<int> members;
  members.reserve(static_cast<size_t>(groupSize));
  for (int64_t member = 0; member < groupSize; ++member) {
    int64_t rest = member;
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
      coord[*it] = rest % shape_[*it];
      rest /= shape_[*it];
    }
    members.push_back(ranks()[indexOf(coord)]);
  }
  return members;
}

std::vector<std::vector<int>> Mesh::groups(std::span<const int> axes) const {
  std::vector<std::vector<int>> result;
  std::set<int> seen;
  for (int64_t index = 0; index < numDevices(); ++index) {
    if (seen.contains(ranks()[index])) continue;
    auto members = group(index, axes);
    seen.insert(members.begin(), members.end());
    result.push_back(std::move(members));
  }
  return result;
}

int Mesh::levelOf(const Cluster& cluster, std::span<const int> axes) const {
  auto members = group(0, axes);
  int level = 0;
  for (int rank : members) level = std::max(level, cluster.levelJoining(members.front(), rank));
  return level;
}

}  // namespace autopar::cluster
