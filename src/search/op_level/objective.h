#pragma once
/// \file
/// The op-level objective: what one op's strategy costs on its own (compute, internal collectives,
/// the gradient synchronisation and optimizer step of the parameters it reads first) and what it
/// keeps in memory.
/// The ILP minimises the sum of these and of its edges' redistribution (ilp.h); sharding
/// propagation prices a candidate's parameter synchronisation with it, and ranks whole
/// assignments by the same sum.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "cost/constants.h"
#include "ir/graph.h"
#include "rules/sharded_op.h"
#include "search/op_level/edge_cost.h"
#include "util/expected.h"

namespace autopar::search {

/// Seconds to synchronise the gradients of the parameters `op` reads first (a shared parameter is
/// charged once, to its first consumer), stored as `shard` needs them: a cut that leaves a weight
/// whole on several devices all-reduces its gradient over them.
Expected<double> parameterSyncSeconds(const ir::Graph& graph, const ir::Op& op,
                                      const rules::ShardedOp& shard, EdgeCostCache& edges);

struct NodeCost {
  double seconds = 0;
  int64_t bytes = 0;  ///< the parameters' states and the activations kept for backward
};

/// Compute and internal collectives (cost::costOfOp), parameterSyncSeconds and the optimizer
/// step over the parameter slices, and memory. `deviceConstants` are the cost model's for the
/// cluster's device (cost::CostConstants::forDevice).
Expected<NodeCost> nodeCost(const ir::Graph& graph, const ir::Op& op, const rules::ShardedOp& shard,
                            const cluster::Cluster& cluster,
                            const cost::CostConstants& deviceConstants, EdgeCostCache& edges);

/// Redistributing `consumer`'s input `index` from its producer's output (the producer sharded as
/// `producer`) to the layout `consumerShard` reads it in, forward and backward. The input must
/// have a producer.
Expected<double> inputEdgeSeconds(const ir::Graph& graph, const ir::Op& consumer, size_t index,
                                  const rules::ShardedOp& producer,
                                  const rules::ShardedOp& consumerShard, EdgeCostCache& edges);

/// How many ops of the full graph each op of a folded one stands for (layer_fold.h): an op's
/// costs count that many times, and an edge's as many times as its lighter end. Empty: once each.
class OpCopies {
 public:
  OpCopies() = default;
  explicit OpCopies(std::vector<double> copies) : copies_(std::move(copies)) {}
  [[nodiscard]] double of(ir::OpId op) const {
    return copies_.empty() ? 1 : copies_[static_cast<size_t>(op)];
  }
  [[nodiscard]] double ofEdge(ir::OpId a, ir::OpId b) const { return std::min(of(a), of(b)); }

 private:
  std::vector<double> copies_;
};

/// The objective of one strategy per op (`shards`, indexed by OpId): every op's node cost plus
/// every tensor's redistribution from its producer to each consumer, forward and backward, each
/// counted `copies` times. `nodeSeconds`, when given, holds the node costs already known (indexed
/// by OpId).
Expected<double> assignmentSeconds(const ir::Graph& graph,
                                   const std::vector<rules::ShardedOp>& shards,
                                   const cluster::Cluster& cluster,
                                   const cost::CostConstants& deviceConstants, EdgeCostCache& edges,
                                   const std::vector<double>* nodeSeconds = nullptr,
                                   const OpCopies& copies = {});

}  // namespace autopar::search
