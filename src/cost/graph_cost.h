#pragma once
/// \file
/// Cost of one training step of a sharded graph (every op given a ShardedOp) on a cluster, without
/// pipelining: forward and backward compute per op, the redistributions on every edge in both
/// directions, gradient synchronisation of parameters, the optimizer step, and per-device memory.
///
/// Storage layouts: a parameter or graph input is stored as its first consumer needs it; other
/// consumers get a redistribution. Forward edges go from the producer's output layout (partial
/// sums included) to the consumer's input layout. Backward, each consumer hands back the gradient
/// in its input layout, partial over ShardedOp::inputGradPartialAxes; consumers handing back
/// identical layouts are summed locally first, so column-parallel Q, K and V cost one all-reduce.
/// The summed gradient is redistributed to the producer's output layout without partial sums; for
/// a parameter, to its storage layout (this is data parallelism's gradient all-reduce).

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/memory.h"
#include "cost/op_cost.h"
#include "ir/graph.h"
#include "layout/redistribution.h"
#include "rules/sharded_op.h"
#include "util/expected.h"

namespace autopar::cost {

struct EvaluateOptions {
  OptimizerSpec optimizer;
  layout::RedistributionOptions redistribution;
};

enum class EdgeDirection { kForward, kBackward };

/// A redistribution inserted on the graph.
struct EdgeRedistribution {
  ir::TensorId tensor = -1;
  ir::OpId producer = ir::kNoOp;  ///< kNoOp for parameters and inputs (their storage layout)
  ir::OpId consumer = ir::kNoOp;  ///< forward: the consumer; backward: first consumer of the group
  EdgeDirection direction = EdgeDirection::kForward;
  bool isGradientSync = false;  ///< backward into a parameter's storage layout
  layout::Redistribution redistribution;
};

struct StepTime {
  double computeSeconds = 0;
  double communicationSeconds = 0;  ///< activation redistributions and internal collectives
  double gradientSyncSeconds = 0;   ///< parameter gradient reductions (not overlapped here)
  double optimizerSeconds = 0;
  [[nodiscard]] double totalSeconds() const {
    return computeSeconds + communicationSeconds + gradientSyncSeconds + optimizerSeconds;
  }
};

struct CostReport {
  std::vector<OpCost> ops;  ///< indexed by OpId
  std::vector<EdgeRedistribution> redistributions;
  StepTime time;
  MemoryBreakdown memory;                    ///< of the most loaded device
  std::vector<int64_t> memoryBytesByDevice;  ///< indexed by position in the ranks list
};

/// Evaluates `sharded` (one ShardedOp per op of `graph`, indexed by OpId, all over the same ranks).
Expected<CostReport> evaluateGraph(const ir::Graph& graph,
                                   const std::vector<rules::ShardedOp>& sharded,
                                   const cluster::Cluster& cluster,
                                   const EvaluateOptions& options = {});

}  // namespace autopar::cost
