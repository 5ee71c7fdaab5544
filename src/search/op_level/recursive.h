#pragma once
/// \file
/// The double-recursive strategy search (MindSpore's "recursive_programming", SAPP; seeds 000 and
/// 002). No annotations are needed. The device count is factored into prime rounds (8 = 2 x 2 x 2,
/// 12 = 2 x 2 x 3). In each round every main op chooses to cut its I, J or K axis by the round's
/// prime, or to cut nothing, by a symbolic cost; the main ops' strategies then propagate to the
/// other ops (propagation.h). Work is linear in the number of ops.
///
/// Main ops: annotated ops, ops with a weight (a parameter operand of rank >= 2: MatMul with a
/// weight, the embedding Gather) and compute-heavy ops (at least 64 FLOPs per output element:
/// MatMul, BatchMatMul, FlashAttention, CrossEntropy). An annotated op keeps its strategy.
/// Order in a round: the ops holding a weight, heaviest first (FLOPs of the current shard), then
/// the main ops without one (attention), which no cut costs memory and which so follow their
/// neighbours. Then settling passes: each op chooses again, from where it stood before the round,
/// against all its neighbours' choices of the round, until none changes (at most three passes;
/// an op whose neighbours have not chosen or changed since it chose is skipped).
///
/// Axes, read from the op's sharding rule (no op-kind switch):
///   I = the batch factor;
///   J = the largest non-batch pass-through factor found in a weight operand, else in every
///       operand, else absent from the output (MatMul's n, FlashAttention's heads, Gather's hidden,
///       CrossEntropy's vocabulary);
///   K = the first non-batch reduction factor (MatMul's k, Gather's vocabulary).
///
/// Symbolic costs, in elements of the current shards (relative units, not seconds):
///   op-cost(I)  = mem_coeff x (elements of the weight operands): cutting the batch keeps the
///                 weights replicated, and mem_coeff prices that memory. Low mem_coeff favours
///                 data parallelism, high favours model parallelism (seed 000);
///   op-cost(J)  = a x elements of the operands that do not carry J and have a gradient: they
///                 stay whole on both halves and their gradients are all-reduced (a graph input,
///                 such as the samples, has none, and reading it whole costs nothing);
///   op-cost(K)  = a x elements of the outputs: they become partial sums to all-reduce;
///   a           = what the cut adds to that all-reduce: a ring over g devices moves 2 (g - 1) / g,
///                 so while the rounds stay within a node a factor already cut c ways and cut by p
///                 again adds 2 (p - 1) / (c p) (1, then 1/2, then 1/4); once the rounds span
///                 nodes, 1 (each cut crosses the slow links, MindSpore's flat cost);
///   op-cost(no) = FLOPs of the current shard / 2 / kFlopsPerElement + op-cost(I): both halves
///                 repeat the work and keep the weights replicated (kFlopsPerElement = 2000: an
///                 A100 does 312 TFLOP/s while NVLink moves 150 G bf16 elements/s, so moving one
///                 element costs about 2000 FLOPs);
///   rest-cost   = elements redistributed between the op's layout and the layouts of the nearest
///                 main ops upstream and downstream (through shape-preserving ops) that already
///                 chose in this round, so choices line up along the network. A K cut's partial
///                 sums count as reduced: its op-cost already pays the reduction.
/// Example (seed 000's log): with mem_coeff 0.01, a MatMul whose weight holds 2048 elements and
/// whose output holds 4096 prints "If the I-axis is cut, the op-cost is 20.48, ...".

#include <limits>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/constants.h"
#include "ir/graph.h"
#include "rules/sharded_op.h"
#include "util/expected.h"

namespace autopar::search {

struct RecursiveOptions {
  double memCoeff = 0.1;  ///< seed 000's mem_coeff (default 0.1, as in MindFormers)
  bool explain = false;   ///< record seed 000's decision lines per main op and round
  bool enableAllToAll = false;
  /// The constants the propagation after the rounds prices ops with (cost/constants.h).
  cost::CostModel costModel = cost::shippedCostModel();
};

struct RecursiveResult {
  std::vector<rules::FactorCuts> cuts;  ///< indexed by OpId; every op decided
  /// With `explain`: per main op and round, "Round 1/3 (cut by 2): <op>" (", pass 2" and on
  /// before the colon for a settling pass that changes the op's choice), one "If the I-axis is
  /// cut, the op-cost is ..., the rest-cost is ..., and the total cost is ..." line per feasible
  /// choice ("If do NOT cut the axis, ..." for no cut), "The costs of cutting the
  /// I-axis/J-axis/K-axis/no_cut are : [const vector]{...}", then "Choose to cut the I-axis"
  /// (J, K) or "Choose NOT to cut".
  std::vector<std::string> explanation;
  /// The least mem_coeff at or above the one searched with at which some choice would change
  /// (infinity: none would); from it up to there, the search returns this plan. Walking these
  /// points visits every plan the search can make (planner/mem_coeff_auto.h).
  double nextMemCoeff = std::numeric_limits<double>::infinity();
};

Expected<RecursiveResult> recursiveProgramming(const ir::Graph& graph,
                                               const std::vector<int>& ranks,
                                               const cluster::Cluster& cluster,
                                               const RecursiveOptions& options = {});

/// The rounds: prime factors of `count`, smallest first (12 -> {2, 2, 3}; 1 -> {}).
std::vector<int64_t> primeRounds(int64_t count);

}  // namespace autopar::search
