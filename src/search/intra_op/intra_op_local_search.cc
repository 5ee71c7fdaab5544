// solveLocalSearch (intra_op_solver.h): the Lagrangian search on every thread, the best result
// and the best bound.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "search/intra_op/intra_op_lagrangian.h"
#include "search/intra_op/intra_op_solver.h"
#include "search/intra_op/local_search_budget.h"
#include "search/intra_op/local_search_moves.h"

namespace autopar::search {

namespace {

using local::Budget;
using local::Indexed;
using local::Outcome;

/// The drives' growth per thread (intra_op_lagrangian.h): threads drive at different rates, so
/// they round different labellings near the dual optimum and the best of them wins.
double driveGrowth(int thread) { return thread % 2 == 0 ? 1.3 : 1.15; }

}  // namespace

Expected<SolveResult> solveLocalSearch(const ir::IntraOpProblem& problem,
                                       const SolveOptions& options) {
  if (auto status = ir::validateProblem(problem); !status) return status.error();
  SolveResult result;
  if (problem.nodes.empty()) {
    result.evaluation = *ir::evaluateSolution(problem, {});
    result.status = "empty problem";
    return result;
  }
  const Indexed index = local::indexProblem(problem);
  const auto deadline =
      local::Clock::now() + std::chrono::duration_cast<local::Clock::duration>(
                                std::chrono::duration<double>(options.timeLimitSeconds));
  const int threads = std::max(options.threads, 1);
  std::vector<Outcome> outcomes(static_cast<size_t>(threads));
  std::vector<Budget> budgets(static_cast<size_t>(threads), Budget(options, deadline));
  auto run = [&](int t) {
    const uint64_t seed = options.seed + static_cast<uint64_t>(t);
    outcomes[static_cast<size_t>(t)] =
        local::lagrangianSearch(index, seed, budgets[static_cast<size_t>(t)], driveGrowth(t));
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) workers.emplace_back(run, t);
  run(0);
  for (auto& worker : workers) worker.join();
  const Outcome* best = nullptr;
  for (const Outcome& outcome : outcomes) {
    if (outcome.feasible && (best == nullptr || outcome.cost < best->cost)) best = &outcome;
  }
  if (best == nullptr) {
    result.status =
        "infeasible: every node's least-memory strategy together exceeds the usage limit, or no "
        "solution within it avoids infinite costs";
    return result;
  }
  result.solution = best->choice;
  result.evaluation = *ir::evaluateSolution(problem, result.solution);
  result.status = "local search, best found by the deadline";
  double bound = -std::numeric_limits<double>::infinity();
  for (const Outcome& outcome : outcomes) bound = std::max(bound, outcome.lowerBound);
  if (std::isfinite(bound) && bound > 0) {
    // Costs are integers, so the optimum is at least the bound rounded up; the bound's own
    // rounding error (messages carry forbidden prices of 1e13) is far below the half taken off.
    result.lowerBound =
        std::min(std::ceil(bound - 0.5), static_cast<double>(result.evaluation.cost));
    const double cost = static_cast<double>(result.evaluation.cost);
    result.optimal = result.lowerBound >= cost;
    if (result.optimal) result.status = "local search, proven optimal";
    result.status += fmt::format("; Lagrangian lower bound {:.0f} (gap {:.2f}%)", result.lowerBound,
                                 100 * (cost - result.lowerBound) / cost);
  }
  return result;
}

}  // namespace autopar::search
