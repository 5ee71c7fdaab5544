#pragma once
/// \file
/// Sharding propagation (MindSpore's search_mode "sharding_propagation", seed 002): strategies
/// spread from a set of fixed ops (user annotations, or the main ops the recursive search decided)
/// to every other op. Each op reached picks, among the strategies that use every device
/// (rules::fullDeviceCuts), the one with the least redistribution cost on its edges to
/// already-decided neighbours plus, ahead, the cost of carrying its output layout down chains of
/// undecided shape-keeping ops (adds, norms, activations; up to 4) into the decided ops beyond
/// them, gathering on the way the dims an op cannot split (a norm's normalised dim); then the
/// least compute cost, then a deterministic tie-break.
/// Conflicts between fixed ops are reported with the redistribution inserted to reconcile them.

#include <map>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "ir/graph.h"
#include "rules/sharded_op.h"
#include "util/expected.h"

namespace autopar::search {

struct PropagationOptions {
  /// Let redistribution use all-to-all when costing edges (seed 001's enable_alltoall).
  bool enableAllToAll = false;
  /// A parameter that two fixed ops store in different layouts is an error (annotations must
  /// agree: a parameter has one storage layout). The recursive search turns this off: its main
  /// ops may disagree, and a redistribution reconciles them.
  bool sharedParameterConflictIsError = true;
};

/// Two fixed ops whose layouts for one tensor disagree, and what reconciles them.
struct Conflict {
  ir::TensorId tensor = -1;
  ir::OpId producer = ir::kNoOp;  ///< kNoOp when the tensor is a parameter or input
  ir::OpId consumer = ir::kNoOp;
  std::string description;  ///< one line: where, and which redistribution was inserted
};

struct PropagationResult {
  std::vector<rules::FactorCuts> cuts;  ///< indexed by OpId; every op decided
  std::vector<Conflict> conflicts;
  std::vector<std::string> log;  ///< one line per op decided, in decision order
};

/// Propagates from `fixed` (OpId -> factor cuts) to every op of `graph` over `ranks`. With no fixed
/// ops, every op takes its default (data-parallel) strategy.
Expected<PropagationResult> propagateStrategies(const ir::Graph& graph,
                                                const std::vector<int>& ranks,
                                                const cluster::Cluster& cluster,
                                                const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                                const PropagationOptions& options = {});

}  // namespace autopar::search
