#pragma once
/// \file
/// The double-recursive strategy search (MindSpore's "recursive_programming", SAPP; seeds 000 and
/// 002). No annotations are needed. The device count is factored into prime rounds (log2 N rounds
/// of bipartition for a power of two; 12 = 2 x 2 x 3). In each round every main op (MatMul,
/// BatchMatMul, FlashAttention, Gather, CrossEntropy, and any annotated op) chooses to cut its I, J
/// or K axis by the round's prime, or to cut nothing, by a symbolic cost; `memCoeff` weighs the
/// data-parallel (I) choice: higher values lead to model parallelism and less memory. Then the main
/// ops' strategies propagate to the other ops (propagation.h). Time is linear in the number of ops.

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "ir/graph.h"
#include "rules/sharded_op.h"
#include "util/expected.h"

namespace autopar::search {

struct RecursiveOptions {
  double memCoeff = 0.1;  ///< seed 000's mem_coeff (default 0.1, as in MindFormers)
  bool explain = false;   ///< record seed 000's decision lines per main op and round
  bool enableAllToAll = false;
};

struct RecursiveResult {
  std::vector<rules::FactorCuts> cuts;  ///< indexed by OpId; every op decided
  /// With `explain`: per main op and round, "If the I-axis is cut, the op-cost is ..., the
  /// rest-cost is ..., and the total cost is ...", "The costs of cutting the
  /// I-axis/J-axis/K-axis/no_cut are : [...]", then the choice or "Choose NOT to cut".
  std::vector<std::string> explanation;
};

Expected<RecursiveResult> recursiveProgramming(const ir::Graph& graph,
                                               const std::vector<int>& ranks,
                                               const cluster::Cluster& cluster,
                                               const RecursiveOptions& options = {});

}  // namespace autopar::search
