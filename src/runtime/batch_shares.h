#pragma once
/// \file
/// Data-parallel replicas that train uneven shares of each micro-batch (a plan across device
/// groups gives a faster kind more samples; `autopar plan --dp-shares`). Layouts cut a dimension
/// evenly; here a dimension cut over ranks of different replicas is cut in proportion to their
/// shares instead, so the batch (and every dimension that carries it, such as batch x sequence
/// after a reshape) splits as the plan says while each op's kernel runs unchanged on its block.
/// The loss stays right: each rank sums its tokens' losses over the whole micro-batch's token
/// count, and the replicas' gradients are summed.
///   BatchShares shares({3, 1}, 4);  // 2 replicas of 2 ranks (TP 2), 4 ranks a stage
///   shares.rangesOf(tokens [4, 128] cut over the replica axis, rank 2)  -> {{3, 4}, {0, 128}}
/// A redistribution that moves such a dimension between the replicas (split, all-gather,
/// all-to-all, reduce-scatter along their axis) is refused: its collectives cut evenly.
/// Internal to the runtime; no LibTorch here.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "layout/tensor_layout.h"
#include "rules/graph_sharding.h"
#include "util/expected.h"

namespace autopar::runtime {

using BlockRanges = std::vector<std::pair<int64_t, int64_t>>;

class BatchShares {
 public:
  /// Even shares: every layout's own ranges.
  BatchShares() = default;
  /// `shares`: per replica, its samples of each micro-batch, replicas in rank order; each stage's
  /// `ranksPerStage` ranks are split into as many replicas, consecutive ranks in one. All equal
  /// is the even split. Fails when the replicas do not divide a stage's ranks.
  static Expected<BatchShares> over(std::vector<int64_t> shares, int ranksPerStage);

  [[nodiscard]] bool even() const { return shares_.empty(); }
  /// The replica `rank` trains in.
  [[nodiscard]] int replicaOf(int rank) const;

  /// The block `rank` holds of a tensor in `layout`: the layout's own ranges, except along a
  /// dimension cut over ranks of different replicas, which is cut in proportion to their shares.
  /// Fails when such a dimension does not divide in those proportions.
  [[nodiscard]] Expected<BlockRanges> rangesOf(const layout::TensorLayout& layout, int rank) const;

  /// Whether a collective along `axis` of `matrix` through `rank` joins ranks of different
  /// replicas while the shares are uneven (it would cut evenly what is cut unevenly).
  [[nodiscard]] bool crossesShares(const layout::DeviceMatrix& matrix, int axis, int rank) const;

  /// Checks that dim 0 of a graph input in `layout` (the batch) is cut across every replica of
  /// `rank`'s stage, so the replicas hold different samples; fails naming what it finds.
  [[nodiscard]] Status checkBatchCut(const layout::TensorLayout& layout, int rank) const;

  /// Before a run: every layout the ops of `stage` (`opStage`; empty: one stage) use divides in
  /// the shares on `rank`, and the graph's inputs there are cut over every replica. Errors name
  /// the op and the tensor.
  [[nodiscard]] Status checkStage(const ir::Graph& graph, const rules::GraphSharding& sharding,
                                  const std::vector<int>& opStage, int stage, int rank) const;

 private:
  /// The replicas of `members` differ.
  [[nodiscard]] bool spansReplicas(std::span<const int> members) const;

  std::vector<int64_t> shares_;  ///< empty when even
  int ranksPerReplica_ = 1;
  int ranksPerStage_ = 1;
};

}  // namespace autopar::runtime
