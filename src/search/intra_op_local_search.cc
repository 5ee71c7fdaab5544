// solveLocalSearch (intra_op_solver.h): schedules of the moves in local_search_moves.h.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "search/intra_op_solver.h"
#include "search/local_search_moves.h"

namespace autopar::search {

namespace {

using local::Clock;
using local::Indexed;
using local::kInfiniteCost;
using local::kNever;
using local::Search;

struct Outcome {
  bool feasible = false;
  int64_t cost = kInfiniteCost;
  std::vector<int> choice;
};

/// When a search stops: the deadline, the iteration budget or the caller's stop flag.
class Budget {
 public:
  Budget(const SolveOptions& options, Clock::time_point deadline)
      : options_(options), start_(Clock::now()), deadline_(deadline) {}
  [[nodiscard]] bool spent() const {
    return (options_.iterations > 0 && moves >= options_.iterations) || Clock::now() >= deadline_ ||
           (options_.stop && *options_.stop);
  }
  /// Under a deadline alone (no iteration budget), the share of the time gone; 0 otherwise, so
  /// that runs with an iteration budget stay deterministic.
  [[nodiscard]] double timeShare() const {
    if (options_.iterations > 0) return 0;
    const double total = std::chrono::duration<double>(deadline_ - start_).count();
    const double gone = std::chrono::duration<double>(Clock::now() - start_).count();
    return total > 0 ? gone / total : 1;
  }
  int64_t moves = 0;  ///< improving moves made so far; they also number the moves

 private:
  const SolveOptions& options_;
  Clock::time_point start_;
  Clock::time_point deadline_;
};

/// The best cost any hard search holds, for the soft search to measure itself against.
using Scoreboard = std::atomic<int64_t>;

void record(Scoreboard& board, int64_t cost) {
  int64_t held = board.load(std::memory_order_relaxed);
  while (cost < held && !board.compare_exchange_weak(held, cost, std::memory_order_relaxed)) {
  }
}

std::vector<int> everyNode(const Indexed& index) {
  std::vector<int> all(index.problem.nodes.size());
  for (size_t v = 0; v < all.size(); ++v) all[v] = static_cast<int>(all.size() - 1 - v);
  return all;
}

/// Memory as a hard constraint: a feasible start improved by moves that keep it feasible.
Outcome hardSearch(const Indexed& index, uint64_t seed, Budget& budget, Scoreboard& board) {
  Search search(index, seed);
  if (!search.start()) return {};
  search.descend(everyNode(index));
  for (; !budget.spent(); budget.moves += 64) {
    search.improve(budget.moves, 64);
    record(board, search.cost());
  }
  return Outcome{search.cost() < kNever, search.cost(), search.choice()};
}

/// The weight on every node live at some moment.
std::vector<double> uniformWeights(const Indexed& index, double weight) {
  std::vector<double> weights(index.problem.nodes.size(), 0.0);
  for (size_t v = 0; v < weights.size(); ++v) {
    if (index.segments[v].first < index.segments[v].second) weights[v] = weight;
  }
  return weights;
}

/// The least uniform weight at which a fresh relaxed search fits in memory, to within a few
/// percent: doubling by 16 from 1, then bisection on a log scale.
double calibrateWeight(const Indexed& index, uint64_t seed, const Budget& budget) {
  const std::vector<int> all = everyNode(index);
  auto fitsAt = [&](double weight) {
    Search fresh(index, seed);
    fresh.relax(uniformWeights(index, weight));
    fresh.startRelaxed();
    fresh.descend(all);
    return fresh.peak() <= index.limit;
  };
  constexpr double kWidest = 1e30;
  double low = 0;
  double high = 1;
  while (!budget.spent() && !fitsAt(high) && high < kWidest) {
    low = high;
    high *= 16;
  }
  if (low == 0) {
    low = high / 16;
    while (!budget.spent() && fitsAt(low) && low > 1 / kWidest) {
      high = low;
      low /= 16;
    }
  }
  for (int step = 0; step < 6 && !budget.spent(); ++step) {
    const double mid = std::sqrt(low * high);
    (fitsAt(mid) ? high : low) = mid;
  }
  return high;
}

/// Memory as a soft constraint (after the weighted relaxation of the contest's winning
/// solver): a search with the limit dropped charges each node a weight per byte of usage above
/// its leanest strategy. It starts from the cheapest solution, memory ignored, with weights
/// twice the calibrated uniform weight. Each round runs relaxed moves, then repairs a copy to
/// fit and polishes it under the true costs; nodes whose interval ran over the limit get
/// heavier (x kHeavier), the others cool (x kCooler), so the search slides from lean, feasible
/// solutions towards cheaper ones at the edge of memory. After kStall rounds without a better
/// feasible solution, it resumes from the best one with the starting weights. A quarter of the
/// way to the deadline, if its best is more than kBehind worse than the hard search's, it gives
/// its remaining time to a second hard search instead (the soft search loses on some instances).
Outcome softSearch(const Indexed& index, uint64_t seed, Budget& budget, Scoreboard& board) {
  constexpr double kCheckpoint = 0.25;
  constexpr double kBehind = 1.05;
  constexpr double kHeavier = 1.3;
  constexpr double kCooler = 0.95;
  constexpr int64_t kRelaxedMoves = 2000;
  constexpr int64_t kPolishMoves = 500;
  constexpr int kStall = 30;
  const std::vector<int> all = everyNode(index);
  Search relaxed(index, seed);
  relaxed.relax({});
  relaxed.startRelaxed();
  relaxed.descend(all);
  // Memory never binds: the hard search is then the same search, and has the time to run.
  if (relaxed.peak() <= index.limit) return hardSearch(index, seed, budget, board);
  const std::vector<double> start = uniformWeights(index, 2 * calibrateWeight(index, seed, budget));
  std::vector<double> weights = start;
  Outcome best;
  bool checked = false;
  for (int stalled = 0; !budget.spent(); ++stalled) {
    const int64_t hardBest = board.load(std::memory_order_relaxed);
    if (!checked && budget.timeShare() >= kCheckpoint && hardBest < kInfiniteCost) {
      checked = true;
      if (static_cast<double>(best.cost) > kBehind * static_cast<double>(hardBest)) {
        Outcome second = hardSearch(index, seed, budget, board);
        return second.cost < best.cost ? second : best;
      }
    }
    if (stalled > kStall && best.feasible) {
      relaxed.assign(best.choice);
      weights = start;
      stalled = 0;
    }
    relaxed.relax(weights);
    relaxed.descend(all);
    relaxed.improve(budget.moves, kRelaxedMoves);
    budget.moves += kRelaxedMoves;
    Search polish = relaxed;
    if (polish.restrict()) {
      polish.descend(all);
      polish.improve(budget.moves, kPolishMoves);
      budget.moves += kPolishMoves;
      if (polish.cost() < best.cost) {
        best = {polish.cost() < kNever, polish.cost(), polish.choice()};
        stalled = -1;
      }
    }
    for (size_t v = 0; v < weights.size(); ++v) {
      weights[v] *= relaxed.fill(static_cast<int>(v)) > 1 ? kHeavier : kCooler;
      weights[v] = std::min(weights[v], 4 * start[v]);
    }
  }
  return best;
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
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.timeLimitSeconds));
  const int threads = std::max(options.threads, 1);
  std::vector<Outcome> outcomes(static_cast<size_t>(threads));
  std::vector<Budget> budgets(static_cast<size_t>(threads), Budget(options, deadline));
  Scoreboard board{kInfiniteCost};
  // Even threads keep memory a hard constraint, odd ones a soft one: each wins on some of the
  // contest's instances (BENCHMARKS.md). A single thread takes the hard one.
  auto run = [&](int t) {
    const uint64_t seed = options.seed + static_cast<uint64_t>(t);
    auto& budget = budgets[static_cast<size_t>(t)];
    outcomes[static_cast<size_t>(t)] = t % 2 == 0 ? hardSearch(index, seed, budget, board)
                                                  : softSearch(index, seed, budget, board);
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
  return result;
}

}  // namespace autopar::search
