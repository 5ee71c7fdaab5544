// solveLocalSearch (intra_op_solver.h): schedules of the moves in local_search_moves.h.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "search/intra_op_lagrangian.h"
#include "search/intra_op_solver.h"
#include "search/local_search_budget.h"
#include "search/local_search_moves.h"

namespace autopar::search {

namespace {

using local::Budget;
using local::Indexed;
using local::kNever;
using local::Outcome;
using local::Search;

std::vector<int> everyNode(const Indexed& index) {
  std::vector<int> all(index.problem.nodes.size());
  for (size_t v = 0; v < all.size(); ++v) all[v] = static_cast<int>(all.size() - 1 - v);
  return all;
}

/// Memory as a hard constraint: a feasible start improved by moves that keep it feasible.
Outcome hardSearch(const Indexed& index, uint64_t seed, Budget& budget) {
  Search search(index, seed);
  if (!search.start()) return {};
  search.descend(everyNode(index));
  for (; !budget.spent(); budget.moves += 64) search.improve(budget.moves, 64);
  return Outcome{search.cost() < kNever, search.cost(), search.choice()};
}

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
  // Even threads run the Lagrangian search, odd ones the hard search; a single thread takes the
  // Lagrangian one, the stronger on every contest instance (BENCHMARKS.md).
  auto run = [&](int t) {
    const uint64_t seed = options.seed + static_cast<uint64_t>(t);
    auto& budget = budgets[static_cast<size_t>(t)];
    outcomes[static_cast<size_t>(t)] =
        t % 2 == 0 ? local::lagrangianSearch(index, seed, budget) : hardSearch(index, seed, budget);
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
    result.status += fmt::format("; Lagrangian lower bound {:.0f} (gap {:.2f}%)", result.lowerBound,
                                 100 * (cost - result.lowerBound) / cost);
  }
  return result;
}

}  // namespace autopar::search
