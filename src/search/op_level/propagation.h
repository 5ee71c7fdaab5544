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
#include "cost/constants.h"
#include "ir/graph.h"
#include "rules/sharded_op.h"
#include "search/op_level/objective.h"
#include "util/expected.h"

namespace autopar::search {

struct PropagationOptions {
  /// Let redistribution use all-to-all when costing edges (seed 001's enable_alltoall).
  bool enableAllToAll = false;
  /// The constants ops are priced with (cost/constants.h).
  cost::CostModel costModel = cost::shippedCostModel();
  /// A parameter that two fixed ops store in different layouts is an error (annotations must
  /// agree: a parameter has one storage layout). The recursive search turns this off: its main
  /// ops may disagree, and a redistribution reconciles them.
  bool sharedParameterConflictIsError = true;
  /// Also price the gradient synchronisation a candidate's parameters need (objective.h): a cut
  /// that leaves a weight whole on several devices all-reduces its gradient. Off, an op takes the
  /// strategy with the least redistribution, MindSpore's rule ("the fewest tensor redistribution
  /// communications", seed 002), which annotations of the weight ops make sufficient. On when no
  /// op is annotated: propagation then decides the weight ops too.
  bool priceParameterSync = false;
  /// The copies each op stands for when the graph is folded (layer_fold.h): its costs, and its
  /// edges', count that many times.
  OpCopies copies;
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

/// Propagates from `fixed` (OpId -> factor cuts) to every op of `graph` over `ranks`.
/// With no fixed op, where MindSpore's propagation refuses the graph ("There is no operator that
/// is configured sharding strategy"), the heaviest op anchors it. The spread, with
/// priceParameterSync on, starts from each of the anchor's 12 full-device strategies of least
/// node cost (objective.h). The 3 results of least objective are then refined by coordinate
/// descent: each op takes again the strategy with the least node cost plus redistribution to its
/// neighbours, until none changes (at most 4 passes). On the one of least objective (the sum the
/// ILP minimises), the heaviest components of ops joined without redistribution, then the ops
/// around the heaviest roles of the repeated blocks, are spread again from a few strategies, and
/// the least objective kept and refined.
/// bench/search_quality.sh compares its plans' step times with the ILP's.
Expected<PropagationResult> propagateStrategies(const ir::Graph& graph,
                                                const std::vector<int>& ranks,
                                                const cluster::Cluster& cluster,
                                                const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                                const PropagationOptions& options = {});

}  // namespace autopar::search
