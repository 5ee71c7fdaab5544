#pragma once
/// \file
/// Solvers for the intra-operator problem (ir/intra_op_problem.h).
///
/// solveLocalSearch scales to the contest's instances (tens of thousands of nodes):
///   1. start from each node's least-memory strategy, which is feasible whenever any solution is
///      (usage only adds up);
///   2. improve one node at a time (a move never crosses the usage limit, checked on a segment
///      tree over the timeline) until no node can improve;
///   3. until the deadline, perturb a random neighbourhood (a node and the nodes a few edges away
///      get random strategies within the limit), improve again, and keep the result only when it
///      is cheaper (iterated local search).
/// Every candidate is feasible, so it never returns a solution over the limit once it has one.
/// Threads run independent searches from seeds seed, seed + 1, ...; the cheapest result wins, ties
/// to the lowest seed. With an iteration budget instead of a deadline the result depends only on
/// the problem and the seed.
///
/// solveIlp is exact on small and medium problems (Alpa's formulation solved with CBC): a binary
/// per (node, strategy), an edge term linearised with one variable per strategy pair whose row
/// and column sums equal the two nodes' choices, and a memory row at every moment a node starts.
/// Dominated strategies (no cheaper in cost, memory and every edge) are removed first.

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/intra_op_problem.h"
#include "util/expected.h"

namespace autopar::search {

struct SolveOptions {
  double timeLimitSeconds = 10;
  /// > 0: stop after this many perturbations per thread instead of at the deadline (the
  /// deadline still applies as a safety net).
  int64_t iterations = 0;
  uint64_t seed = 1;
  int threads = 2;
  /// When set and true, the local search stops early (solvePortfolio sets it once the ILP has
  /// proven its optimum).
  const std::atomic<bool>* stop = nullptr;
  /// solveIlp: a feasible solution to start from (CBC's incumbent), or empty.
  std::vector<int> incumbent;
};

struct SolveResult {
  std::vector<int> solution;  ///< empty when none is feasible
  ir::Evaluation evaluation;
  bool optimal = false;   ///< proven (ILP only)
  double lowerBound = 0;  ///< ILP: the best bound; the gap is (cost - bound) / cost
  std::string status;     ///< one line: "optimal", "time limit, gap 2.1%", why infeasible
};

Expected<SolveResult> solveLocalSearch(const ir::IntraOpProblem& problem,
                                       const SolveOptions& options);

Expected<SolveResult> solveIlp(const ir::IntraOpProblem& problem, const SolveOptions& options);

/// Both: on problems small enough for CBC (at most `kIlpEdgeEntries` edge cost entries) the local
/// search runs for a tenth of the time, then the ILP alone (sharing the machine slows CBC badly)
/// starting from the local search's solution, and the cheaper feasible result wins; larger
/// problems get the local search on every thread.
inline constexpr int64_t kIlpEdgeEntries = 1'000'000;
Expected<SolveResult> solvePortfolio(const ir::IntraOpProblem& problem,
                                     const SolveOptions& options);

/// For tests: the optimum by enumerating every combination (problems of a few nodes only).
SolveResult solveBruteForce(const ir::IntraOpProblem& problem);

}  // namespace autopar::search
