#pragma once
/// \file
/// The intra-operator sharding problem in its combinatorial form (Alpa's ILP, XLA's auto-sharding,
/// the ASPLOS 2025 IOPDDL contest): every node picks one strategy, with a cost and a memory use
/// over the node's live interval; every edge charges a cost for each pair of strategies; at every
/// moment, the memory of the live nodes must stay within a limit.
///
/// Intervals are half-open, [start, end): a node with [30, 70) is live at 30 and at 69, not at 70.
/// Edge costs are row-major over (strategy of the first node, strategy of the second).

#include <cstdint>
#include <string>
#include <vector>

#include "util/expected.h"

namespace autopar::ir {

/// A cost at or above this is "never pick this" (the contest writes 10^18).
inline constexpr int64_t kInfiniteCost = 1'000'000'000'000'000'000;

/// a + b for non-negative costs, stopping at kInfiniteCost.
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  return a >= kInfiniteCost - b ? kInfiniteCost : a + b;
}

struct IntraOpProblem {
  std::string name;
  struct Node {
    int64_t start = 0;
    int64_t end = 0;
    std::vector<int64_t> costs;   ///< per strategy
    std::vector<int64_t> usages;  ///< per strategy, while live
  };
  struct Edge {
    int from = 0;
    int to = 0;
    std::vector<int64_t> costs;  ///< costs[i * strategies(to) + j]
  };
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  int64_t usageLimit = 0;  ///< < 0: no limit

  [[nodiscard]] int strategies(int node) const {
    return static_cast<int>(nodes[static_cast<size_t>(node)].costs.size());
  }
};

/// Checks sizes, indices and signs; messages name the field ("edges.costs[3]: expected 6 entries
/// (2 x 3 strategies), got 5").
Status validateProblem(const IntraOpProblem& problem);

struct Evaluation {
  int64_t cost = 0;       ///< saturates at kInfiniteCost
  int64_t peakUsage = 0;  ///< the most memory live at any moment
  bool feasible = false;  ///< within the usage limit and no infinite cost
  std::string reason;     ///< why not feasible
};

/// The total cost and peak usage of `solution` (one strategy index per node). Fails when the
/// solution has the wrong length or an index out of range.
Expected<Evaluation> evaluateSolution(const IntraOpProblem& problem,
                                      const std::vector<int>& solution);

}  // namespace autopar::ir
