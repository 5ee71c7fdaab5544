// solveLocalSearch and solveBruteForce (intra_op_solver.h).

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "search/intra_op_solver.h"

namespace autopar::search {

namespace {

using ir::IntraOpProblem;
using ir::kInfiniteCost;
using Clock = std::chrono::steady_clock;

/// Infinite costs ("never") are searched as this penalty, far above any real total yet small
/// enough that a sum of many never overflows; the final evaluation rejects any that remain.
constexpr int64_t kNever = 1'000'000'000'000'000;

int64_t capped(int64_t cost) { return cost >= kInfiniteCost ? kNever : cost; }

/// Range add, range max over the timeline's segments (hand-written: a lazy segment tree is a few
/// lines and no library in DESIGN.md's list has one).
class UsageTree {
 public:
  explicit UsageTree(size_t size)
      : size_(std::max<size_t>(size, 1)), max_(4 * size_), add_(4 * size_) {}
  void add(size_t lo, size_t hi, int64_t value) { add(1, 0, size_, lo, hi, value); }
  [[nodiscard]] int64_t max(size_t lo, size_t hi) const { return max(1, 0, size_, lo, hi); }

 private:
  void add(size_t n, size_t l, size_t r, size_t lo, size_t hi, int64_t value) {
    if (hi <= l || r <= lo) return;
    if (lo <= l && r <= hi) {
      max_[n] += value;
      add_[n] += value;
      return;
    }
    const size_t m = (l + r) / 2;
    add(2 * n, l, m, lo, hi, value);
    add(2 * n + 1, m, r, lo, hi, value);
    max_[n] = add_[n] + std::max(max_[2 * n], max_[2 * n + 1]);
  }
  [[nodiscard]] int64_t max(size_t n, size_t l, size_t r, size_t lo, size_t hi) const {
    if (hi <= l || r <= lo) return INT64_MIN / 4;
    if (lo <= l && r <= hi) return max_[n];
    const size_t m = (l + r) / 2;
    return add_[n] + std::max(max(2 * n, l, m, lo, hi), max(2 * n + 1, m, r, lo, hi));
  }
  size_t size_;
  std::vector<int64_t> max_;
  std::vector<int64_t> add_;
};

struct Incidence {
  int edge;
  bool isFrom;  ///< the node is the edge's first node
};

/// Shared, read-only views of the problem.
struct Indexed {
  const IntraOpProblem& problem;
  std::vector<std::vector<Incidence>> incident;
  std::vector<std::pair<size_t, size_t>> segments;  ///< per node, [lo, hi) on the timeline
  size_t timeline = 0;
  int64_t limit = 0;
};

Indexed indexProblem(const IntraOpProblem& problem) {
  Indexed index{problem, {}, {}, 0, problem.usageLimit < 0 ? INT64_MAX / 4 : problem.usageLimit};
  index.incident.resize(problem.nodes.size());
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    index.incident[static_cast<size_t>(problem.edges[e].from)].push_back(
        {static_cast<int>(e), true});
    index.incident[static_cast<size_t>(problem.edges[e].to)].push_back(
        {static_cast<int>(e), false});
  }
  std::vector<int64_t> moments;
  for (const auto& node : problem.nodes) {
    moments.push_back(node.start);
    moments.push_back(node.end);
  }
  std::sort(moments.begin(), moments.end());
  moments.erase(std::unique(moments.begin(), moments.end()), moments.end());
  auto at = [&](int64_t t) {
    return static_cast<size_t>(std::lower_bound(moments.begin(), moments.end(), t) -
                               moments.begin());
  };
  for (const auto& node : problem.nodes) index.segments.emplace_back(at(node.start), at(node.end));
  index.timeline = moments.size();
  return index;
}

/// One search: the assignment, its cost and the usage on the timeline.
class Search {
 public:
  Search(const Indexed& index, uint64_t seed)
      : ix_(index), tree_(index.timeline), rng_(seed), choice_(index.problem.nodes.size(), -1) {}

  /// Each node's least-memory strategy (finite ones first). False when that is over the limit:
  /// then nothing fits, as usage only adds up.
  bool start() {
    const auto& nodes = ix_.problem.nodes;
    for (size_t v = 0; v < nodes.size(); ++v) {
      int best = -1;
      for (int s = 0; s < static_cast<int>(nodes[v].costs.size()); ++s) {
        if (nodes[v].costs[static_cast<size_t>(s)] >= kInfiniteCost) continue;
        if (best < 0 ||
            nodes[v].usages[static_cast<size_t>(s)] < nodes[v].usages[static_cast<size_t>(best)])
          best = s;
      }
      if (best < 0) return false;
      set(static_cast<int>(v), best);
    }
    cost_ = totalCost();
    const int64_t peak = ix_.timeline > 0 ? tree_.max(0, ix_.timeline) : 0;
    return cost_ < kInfiniteCost && peak <= ix_.limit;
  }

  /// Improves nodes from the worklist until none can improve.
  void descend(std::vector<int> work) {
    std::vector<char> queued(choice_.size(), 0);
    for (int v : work) queued[static_cast<size_t>(v)] = 1;
    while (!work.empty()) {
      const int v = work.back();
      work.pop_back();
      queued[static_cast<size_t>(v)] = 0;
      auto [best, delta] = bestMove(v);
      if (best == choice_[static_cast<size_t>(v)] || delta >= 0) continue;
      move(v, best, delta);
      for (const Incidence& inc : ix_.incident[static_cast<size_t>(v)]) {
        const auto& edge = ix_.problem.edges[static_cast<size_t>(inc.edge)];
        const int other = inc.isFrom ? edge.to : edge.from;
        if (!queued[static_cast<size_t>(other)]) {
          queued[static_cast<size_t>(other)] = 1;
          work.push_back(other);
        }
      }
    }
  }

  /// One perturbation and descent; kept when cheaper, else undone.
  void perturb() {
    const int64_t before = cost_;
    log_.clear();
    logging_ = true;
    std::vector<int> region = neighbourhood();
    for (int v : region) {
      const auto& node = ix_.problem.nodes[static_cast<size_t>(v)];
      const int s = static_cast<int>(rng_() % node.costs.size());
      if (node.costs[static_cast<size_t>(s)] >= kInfiniteCost || !fits(v, s)) continue;
      move(v, s, moveDelta(v, s));
    }
    std::vector<int> work = region;
    for (int v : region) {
      for (const Incidence& inc : ix_.incident[static_cast<size_t>(v)]) {
        const auto& edge = ix_.problem.edges[static_cast<size_t>(inc.edge)];
        work.push_back(inc.isFrom ? edge.to : edge.from);
      }
    }
    descend(work);
    logging_ = false;
    if (cost_ < before) return;
    for (auto it = log_.rbegin(); it != log_.rend(); ++it) set(it->first, it->second);
    cost_ = before;
  }

  [[nodiscard]] int64_t cost() const { return cost_; }
  [[nodiscard]] const std::vector<int>& choice() const { return choice_; }

 private:
  [[nodiscard]] int64_t edgeCost(const Incidence& inc, int mine) const {
    const auto& edge = ix_.problem.edges[static_cast<size_t>(inc.edge)];
    const int width = ix_.problem.strategies(edge.to);
    const int other = choice_[static_cast<size_t>(inc.isFrom ? edge.to : edge.from)];
    const size_t k = inc.isFrom ? static_cast<size_t>(mine) * width + other
                                : static_cast<size_t>(other) * width + mine;
    return capped(edge.costs[k]);
  }

  /// Cost change of `v` taking `s`, with infinite costs as kNever.
  [[nodiscard]] int64_t moveDelta(int v, int s) const {
    const auto& node = ix_.problem.nodes[static_cast<size_t>(v)];
    const int cur = choice_[static_cast<size_t>(v)];
    int64_t delta = capped(node.costs[static_cast<size_t>(s)]) -
                    capped(node.costs[static_cast<size_t>(cur)]);
    for (const Incidence& inc : ix_.incident[static_cast<size_t>(v)]) {
      delta += edgeCost(inc, s) - edgeCost(inc, cur);
    }
    return delta;
  }

  [[nodiscard]] bool fits(int v, int s) const {
    const auto& node = ix_.problem.nodes[static_cast<size_t>(v)];
    const int64_t grow = node.usages[static_cast<size_t>(s)] -
                         node.usages[static_cast<size_t>(choice_[static_cast<size_t>(v)])];
    if (grow <= 0) return true;
    const auto [lo, hi] = ix_.segments[static_cast<size_t>(v)];
    return lo >= hi || tree_.max(lo, hi) + grow <= ix_.limit;
  }

  [[nodiscard]] std::pair<int, int64_t> bestMove(int v) const {
    int best = choice_[static_cast<size_t>(v)];
    int64_t bestDelta = 0;
    const int count = ix_.problem.strategies(v);
    for (int s = 0; s < count; ++s) {
      if (s == choice_[static_cast<size_t>(v)]) continue;
      const int64_t delta = moveDelta(v, s);
      if (delta < bestDelta && fits(v, s)) {
        best = s;
        bestDelta = delta;
      }
    }
    return {best, bestDelta};
  }

  void move(int v, int s, int64_t delta) {
    if (logging_) log_.emplace_back(v, choice_[static_cast<size_t>(v)]);
    set(v, s);
    cost_ += delta;
  }

  /// Sets `v` to `s`, updating the usage (not the cost).
  void set(int v, int s) {
    const auto& node = ix_.problem.nodes[static_cast<size_t>(v)];
    const int cur = choice_[static_cast<size_t>(v)];
    const int64_t change =
        node.usages[static_cast<size_t>(s)] - (cur < 0 ? 0 : node.usages[static_cast<size_t>(cur)]);
    const auto [lo, hi] = ix_.segments[static_cast<size_t>(v)];
    if (change != 0 && lo < hi) tree_.add(lo, hi, change);
    choice_[static_cast<size_t>(v)] = s;
  }

  [[nodiscard]] int64_t totalCost() const {
    int64_t total = 0;
    for (size_t v = 0; v < choice_.size(); ++v) {
      total += capped(ix_.problem.nodes[v].costs[static_cast<size_t>(choice_[v])]);
    }
    for (size_t e = 0; e < ix_.problem.edges.size(); ++e) {
      total += edgeCost({static_cast<int>(e), true},
                        choice_[static_cast<size_t>(ix_.problem.edges[e].from)]);
    }
    return total;
  }

  /// A random node and up to a dozen nodes within three edges of it.
  std::vector<int> neighbourhood() {
    const int root = static_cast<int>(rng_() % choice_.size());
    const size_t limit = 2 + rng_() % 12;
    std::vector<int> region{root};
    for (size_t i = 0; i < region.size() && region.size() < limit; ++i) {
      for (const Incidence& inc : ix_.incident[static_cast<size_t>(region[i])]) {
        const auto& edge = ix_.problem.edges[static_cast<size_t>(inc.edge)];
        const int other = inc.isFrom ? edge.to : edge.from;
        if (std::find(region.begin(), region.end(), other) == region.end()) region.push_back(other);
        if (region.size() >= limit) break;
      }
    }
    return region;
  }

  const Indexed& ix_;
  UsageTree tree_;
  std::mt19937_64 rng_;
  std::vector<int> choice_;
  int64_t cost_ = 0;
  bool logging_ = false;
  std::vector<std::pair<int, int>> log_;
};

struct Outcome {
  bool feasible = false;
  int64_t cost = kInfiniteCost;
  std::vector<int> choice;
};

Outcome runSearch(const Indexed& index, uint64_t seed, const SolveOptions& options,
                  Clock::time_point deadline) {
  Search search(index, seed);
  if (!search.start()) return {};
  std::vector<int> all(index.problem.nodes.size());
  for (size_t v = 0; v < all.size(); ++v) all[v] = static_cast<int>(all.size() - 1 - v);
  search.descend(all);
  for (int64_t i = 0; options.iterations <= 0 || i < options.iterations; ++i) {
    if ((i & 63) == 0 && Clock::now() >= deadline) break;
    search.perturb();
  }
  return Outcome{search.cost() < kNever, search.cost(), search.choice()};
}

}  // namespace

Expected<SolveResult> solveLocalSearch(const IntraOpProblem& problem, const SolveOptions& options) {
  if (auto status = ir::validateProblem(problem); !status) return status.error();
  SolveResult result;
  if (problem.nodes.empty()) {
    result.evaluation = *ir::evaluateSolution(problem, {});
    result.status = "empty problem";
    return result;
  }
  const Indexed index = indexProblem(problem);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.timeLimitSeconds));
  const int threads = std::max(options.threads, 1);
  std::vector<Outcome> outcomes(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) {
    workers.emplace_back([&, t] {
      outcomes[static_cast<size_t>(t)] = runSearch(index, options.seed + t, options, deadline);
    });
  }
  outcomes[0] = runSearch(index, options.seed, options, deadline);
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

SolveResult solveBruteForce(const IntraOpProblem& problem) {
  SolveResult result;
  std::vector<int> choice(problem.nodes.size(), 0);
  while (true) {
    auto evaluation = ir::evaluateSolution(problem, choice);
    if (evaluation && evaluation->feasible &&
        (result.solution.empty() || evaluation->cost < result.evaluation.cost)) {
      result.solution = choice;
      result.evaluation = *evaluation;
    }
    size_t v = 0;
    while (v < choice.size() && ++choice[v] == problem.strategies(static_cast<int>(v))) {
      choice[v++] = 0;
    }
    if (v == choice.size()) break;
  }
  result.optimal = !result.solution.empty();
  result.status = result.optimal ? "optimal (enumeration)" : "infeasible";
  return result;
}

}  // namespace autopar::search
