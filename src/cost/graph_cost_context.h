#pragma once
/// \file
/// The state the passes of cost::evaluateGraph share (graph_cost.cc runs them in order), and the
/// passes that live in their own files: the redistributions on the graph's edges
/// (graph_cost_edges.cc). Internal to src/cost.

#include <utility>
#include <vector>

#include "cost/compute.h"
#include "cost/graph_cost.h"
#include "layout/redistribution_cache.h"

namespace autopar::cost::detail {

/// One evaluation: its inputs, what the passes have worked out so far and the report they fill.
struct Context {
  const ir::Graph& graph;
  const std::vector<rules::ShardedOp>& sharded;
  const cluster::Cluster& cluster;
  const EvaluateOptions& options;
  DeviceModel device;                         ///< the cluster's device under options.costModel
  std::vector<int> stageOf;                   ///< per op
  std::vector<layout::TensorLayout> sources;  ///< per tensor with consumers
  /// Per parameter: the layout its gradient is reduced into (ParameterPlacement::gradientTarget).
  std::vector<layout::TensorLayout> gradientTargets;
  std::vector<ParameterCollective> parameterCollectives;
  /// Per tensor: the forward redistributions costed, by target layout (activations look them up
  /// when a gather is redone in backward).
  std::vector<std::vector<std::pair<layout::TensorLayout, double>>> forwardSeconds;
  /// Per op: backward seconds of it and of the later ops of its stage (backward runs in reverse,
  /// so this is when its backward ends); per stage: the whole backward.
  std::vector<double> backwardDoneSeconds;
  std::vector<double> stageBackwardSeconds;
  CostReport report;
  layout::RedistributionCache redistributions;
  /// Per tensor: read by its one consumer inside its producer's kernel (elementwise fusion).
  std::vector<bool> inFusedKernel = {};

  StageCost& stage(ir::OpId op) {
    return report.stages[static_cast<size_t>(stageOf[static_cast<size_t>(op)])];
  }
};

/// Bytes of one element of `tensor` in its own dtype.
inline int64_t elementBytes(const ir::Graph& graph, ir::TensorId tensor) {
  return ir::dtypeBytes(graph.tensor(tensor).type.dtype);
}

/// The redistribution of every tensor into each distinct layout its consumers read (forward), and
/// of every gradient back into its source's layout (backward): activation traffic on the stages,
/// parameter collectives in `parameterCollectives`, each edge in `report.redistributions`, and
/// the forward ones' seconds by target layout in `forwardSeconds`.
Status costForwardEdges(Context& ctx);
Status costBackwardEdges(Context& ctx);

}  // namespace autopar::cost::detail
