#include "runtime/batch_shares.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace autopar::runtime {

Expected<BatchShares> BatchShares::over(std::vector<int64_t> shares, int ranksPerStage) {
  BatchShares result;
  const bool even =
      std::adjacent_find(shares.begin(), shares.end(), std::not_equal_to<>()) == shares.end();
  if (even) return result;
  const auto replicas = static_cast<int>(shares.size());
  if (ranksPerStage % replicas != 0) {
    return Error{fmt::format("{} data-parallel shares do not divide a stage's {} ranks", replicas,
                             ranksPerStage)};
  }
  result.shares_ = std::move(shares);
  result.ranksPerStage_ = ranksPerStage;
  result.ranksPerReplica_ = ranksPerStage / replicas;
  return result;
}

int BatchShares::replicaOf(int rank) const { return (rank % ranksPerStage_) / ranksPerReplica_; }

bool BatchShares::spansReplicas(std::span<const int> members) const {
  return std::any_of(members.begin(), members.end(),
                     [&](int member) { return replicaOf(member) != replicaOf(members.front()); });
}

Expected<BlockRanges> BatchShares::rangesOf(const layout::TensorLayout& layout, int rank) const {
  const layout::DeviceMatrix& matrix = layout.deviceMatrix;
  const int64_t here = matrix.positionOf(rank);
  BlockRanges ranges = layout.sliceRanges(here);
  if (even()) return ranges;
  const ir::Shape slice = layout.sliceShape();
  for (size_t dim = 0; dim < ranges.size(); ++dim) {
    if (layout.dimAxes[dim].empty()) continue;
    const std::vector<int> members = matrix.group(here, layout.dimAxes[dim]);
    if (!spansReplicas(members)) continue;
    // Each block weighs its replica's share over the blocks that replica holds; in integers:
    // scaled by the least common multiple of those block counts.
    std::map<int, int64_t> blocksOfReplica;
    std::vector<std::pair<int64_t, int>> blocks;  // block index along the dim, replica
    for (int member : members) {
      const int64_t block = layout.sliceRanges(matrix.positionOf(member))[dim].first / slice[dim];
      blocks.emplace_back(block, replicaOf(member));
      ++blocksOfReplica[replicaOf(member)];
    }
    std::sort(blocks.begin(), blocks.end());
    int64_t scale = 1;
    for (const auto& [replica, count] : blocksOfReplica) scale = std::lcm(scale, count);
    auto weight = [&](int replica) {
      return shares_[static_cast<size_t>(replica)] * (scale / blocksOfReplica[replica]);
    };
    const int64_t mine = ranges[dim].first / slice[dim];
    int64_t before = 0;
    int64_t total = 0;
    for (const auto& [block, replica] : blocks) {
      if (block < mine) before += weight(replica);
      total += weight(replica);
    }
    const auto size = static_cast<__int128>(layout.shape[dim]);
    const __int128 lo = size * before;
    const __int128 hi = size * (before + weight(replicaOf(rank)));
    if (lo % total != 0 || hi % total != 0) {
      std::vector<int64_t> shares;
      for (const auto& [block, replica] : blocks) shares.push_back(weight(replica));
      return Error{fmt::format("dim {} of size {} does not divide in the data-parallel shares {}",
                               dim, layout.shape[dim], fmt::join(shares, ":"))};
    }
    ranges[dim] = {static_cast<int64_t>(lo / total), static_cast<int64_t>(hi / total)};
  }
  return ranges;
}

bool BatchShares::crossesShares(const layout::DeviceMatrix& matrix, int axis, int rank) const {
  if (even()) return false;
  const std::vector<int> axes{axis};
  return spansReplicas(matrix.group(matrix.positionOf(rank), axes));
}

Status BatchShares::checkBatchCut(const layout::TensorLayout& layout, int rank) const {
  if (even()) return {};
  if (layout.dimAxes.empty() || layout.dimAxes[0].empty()) {
    return Error{
        "its batch (dim 0) is not cut; uneven data-parallel shares need it cut over "
        "every replica"};
  }
  std::set<int> replicas;
  for (int member :
       layout.deviceMatrix.group(layout.deviceMatrix.positionOf(rank), layout.dimAxes[0])) {
    replicas.insert(replicaOf(member));
  }
  if (replicas.size() != shares_.size()) {
    return Error{fmt::format(
        "its batch (dim 0) is cut over {} of the {} data-parallel replicas; uneven shares need "
        "it cut over every replica",
        replicas.size(), shares_.size())};
  }
  return {};
}

Status BatchShares::checkStage(const ir::Graph& graph, const rules::GraphSharding& sharding,
                               const std::vector<int>& opStage, int stage, int rank) const {
  if (even()) return {};
  for (const ir::Op& op : graph.ops()) {
    const auto id = static_cast<size_t>(op.id);
    if ((opStage.empty() ? 0 : opStage[id]) != stage) continue;
    const rules::ShardedOp& sharded = sharding.ops[id];
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const ir::Tensor& tensor = graph.tensor(op.inputs[i]);
      const std::string where = fmt::format("{}: input '{}'", op.name, tensor.name);
      if (auto ranges = rangesOf(sharded.inputs[i], rank); !ranges) return ranges.error().in(where);
      if (tensor.role != ir::TensorRole::kInput) continue;
      if (auto cut = checkBatchCut(sharded.inputs[i], rank); !cut) return cut.error().in(where);
    }
    if (auto ranges = rangesOf(sharded.outputs[0], rank); !ranges) {
      return ranges.error().in(fmt::format("{}: output", op.name));
    }
  }
  return {};
}

}  // namespace autopar::runtime
