#pragma once
/// \file
/// Solvers for the intra-operator problem (ir/intra_op_problem.h).
///
/// solveLocalSearch scales to the contest's instances (tens of thousands of nodes). Every thread
/// runs the Lagrangian search (intra_op_lagrangian.h): dual ascent on memory multipliers over
/// message passing gives a lower bound, and primal drives round the dual's labellings until they
/// fit, then polish them with the local search's moves (local_search_moves.h: a greedy start,
/// a memory repair, descents, exact tree moves and perturbations, all within the limit). Threads
/// drive at different rates from seeds seed, seed + 1, ...; the cheapest result wins, ties to the
/// lowest seed. It never returns a solution over the limit. With an iteration budget instead of a
/// deadline the result depends only on the problem and the seed.
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
  /// > 0: stop after this many rounds of the Lagrangian search per thread instead of at the
  /// deadline (the deadline still applies as a safety net).
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
  bool optimal = false;  ///< proven: by the ILP, or by a Lagrangian bound meeting the cost
  /// The best proven bound (CBC's, or the Lagrangian search's); the gap is (cost - bound) / cost.
  double lowerBound = 0;
  std::string status;  ///< one line: "optimal", "time limit, gap 2.1%", why infeasible
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
