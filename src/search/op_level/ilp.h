#pragma once
/// \file
/// The exact operator-level search (`--search ilp`): a graph's strategy choice as the
/// intra-operator problem (ir/intra_op_problem.h), solved with CBC (intra_op_solver.h).
///
/// Extraction, over one mesh of `ranks`:
///   - a node per op; its strategies are rules::fullDeviceCuts, or only its annotation;
///   - a strategy's cost is the op's forward and backward compute and its internal collectives
///     (cost::costOfOp), plus the gradient synchronisation and optimizer step of the parameters
///     it reads first (objective.h);
///   - a strategy's memory is the state of those parameters (mixed-precision Adam) and the
///     activations the op keeps for backward, at the strategy's layouts;
///   - an edge per producer-consumer pair charges the redistribution of every tensor between
///     them, forward and backward (EdgeCostCache::edgeSeconds);
///   - all activations are live at the end of the forward pass, so memory is one constraint: the
///     sum over nodes must fit `memoryLimitBytes`.
/// Costs are integers in nanoseconds.

#include <cstdint>
#include <map>
#include <vector>

#include "cluster/cluster.h"
#include "cost/constants.h"
#include "ir/graph.h"
#include "ir/intra_op_problem.h"
#include "rules/sharded_op.h"
#include "search/intra_op/intra_op_solver.h"
#include "search/op_level/objective.h"
#include "util/expected.h"

namespace autopar::search {

struct IlpExtraction {
  ir::IntraOpProblem problem;
  std::vector<std::vector<rules::FactorCuts>> candidates;  ///< per op, per strategy
};

/// Each op's candidates priced with `costModel` (cost/constants.h) on the cluster's device.
Expected<IlpExtraction> extractIntraOpProblem(const ir::Graph& graph, const std::vector<int>& ranks,
                                              const cluster::Cluster& cluster,
                                              const cost::CostConstants& costModel,
                                              const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                              int64_t memoryLimitBytes, bool enableAllToAll);

/// The problem with the layers of each stack tied to one decision: the k-th op of every layer
/// (ir::isStackLayer) takes the same strategy as the k-th op of the stack's first layer, when
/// their kinds and candidates agree. Tied nodes merge into their representative: costs and
/// usages add up, edges move onto the representatives (an edge that lands on one node adds its
/// diagonal to that node). `representative[v]` maps each original node to its node in `problem`.
struct TiedProblem {
  ir::IntraOpProblem problem;
  std::vector<int> representative;
};
TiedProblem tieRepeatedLayers(const ir::Graph& graph, const IlpExtraction& extraction);

struct IlpSearchResult {
  std::vector<rules::FactorCuts> cuts;  ///< per op
  SolveResult solve;
  int64_t variables = 0;  ///< strategies over all ops, after extraction
  /// No assignment kept the op-level memory estimate within the limit: the solve was repeated
  /// without it, for the least time, and the plan says whether it fits.
  bool memoryLimitDropped = false;
};

/// Extracts and solves, each op's costs and usages counted `copies` times (a folded graph,
/// layer_fold.h). When no assignment fits the memory limit, solves again without it
/// (IlpSearchResult::memoryLimitDropped); fails when none avoids infinite costs.
Expected<IlpSearchResult> searchIlp(const ir::Graph& graph, const std::vector<int>& ranks,
                                    const cluster::Cluster& cluster,
                                    const cost::CostConstants& costModel,
                                    const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                    int64_t memoryLimitBytes, const SolveOptions& options,
                                    bool enableAllToAll = false, bool tieLayers = false,
                                    const OpCopies& copies = {});

}  // namespace autopar::search
