#pragma once
/// \file
/// The local search's state and moves over an IntraOpProblem (internal to the intra-operator
/// solvers): an assignment with its cost and its memory over time, greedy starts, a repair
/// that brings memory under the limit, descents, exact tree moves and perturbations.
/// intra_op_local_search.cc and intra_op_lagrangian.cc schedule them.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "ir/intra_op_problem.h"
#include "search/intra_op/usage_tree.h"

namespace autopar::search::local {

using ir::IntraOpProblem;
using ir::kInfiniteCost;
using Clock = std::chrono::steady_clock;

/// Infinite costs ("never") are searched as this penalty, far above any real total yet small
/// enough that a sum of many never overflows; the final evaluation rejects any that remain.
constexpr int64_t kNever = 10'000'000'000'000;

/// Memory above this share of the limit counts as crowded for tree moves' usage price.
constexpr double kCrowded = 0.98;

inline int64_t capped(int64_t cost) { return cost >= kInfiniteCost ? kNever : cost; }

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

inline Indexed indexProblem(const IntraOpProblem& problem) {
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

  /// A feasible start: the cheapest strategies improved without regard to memory, then repaired
  /// until memory fits; failing that, every node's least-memory strategy, which fits whenever
  /// anything does (usage only adds up). False when nothing fits.
  bool start() {
    if (greedyStart() && forestPass() && repair()) return true;
    if (cheapStart() && repair()) return true;
    return leastMemoryStart();
  }

  [[nodiscard]] int64_t peak() const { return ix_.timeline > 0 ? tree_.max(0, ix_.timeline) : 0; }

  /// Improves nodes from the worklist until none can improve.
  void descend(std::vector<int> work) {
    // Every entry is back to 0 when the worklist empties, so the flags are kept between calls.
    auto& queued = queued_;
    if (queued.size() != choice_.size()) queued.assign(choice_.size(), 0);
    std::vector<int> unique;
    for (int v : work) {
      if (!queued[static_cast<size_t>(v)]) unique.push_back(v);
      queued[static_cast<size_t>(v)] = 1;
    }
    work = std::move(unique);
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

  /// Re-solves a random tree of up to `size` nodes exactly, the rest fixed (dynamic programming
  /// over the tree's edges; edges closing cycles inside it are left to the evaluation). Kept
  /// when cheaper and within memory, else undone.
  void treeMove(size_t size) {
    const Tree tree = randomTree(size);
    if (tree.nodes.size() < 2) return;
    const std::vector<int> best = solveTree(tree);
    const int64_t before = regionCost(tree.nodes);
    std::vector<int> old;
    for (size_t i = 0; i < tree.nodes.size(); ++i) {
      old.push_back(choice_[static_cast<size_t>(tree.nodes[i])]);
      set(tree.nodes[i], best[i]);
    }
    const int64_t after = regionCost(tree.nodes);
    const bool fitsMemory = peak() <= limit_;
    // The usage price rises while proposals overflow memory and decays while they fit.
    usagePrice_ = fitsMemory ? usagePrice_ * 0.99 : std::max(usagePrice_ * 1.2, 1e-6);
    if (after < before && fitsMemory) {
      cost_ += after - before;
      return;
    }
    for (size_t i = tree.nodes.size(); i-- > 0;) set(tree.nodes[i], old[i]);
  }

  /// Runs `moves` improving moves: mostly exact tree moves, small and now and then large, and
  /// every eighth a perturbation. `first` numbers the first so a search keeps its rhythm.
  void improve(int64_t first, int64_t moves) {
    for (int64_t i = first; i < first + moves; ++i) {
      if (i % 8 == 7) {
        perturb();
      } else if (i % 8 == 6) {
        treeMove(32 + static_cast<size_t>(i % 97));
      } else {
        treeMove(4 + static_cast<size_t>(i % 29));
      }
    }
  }

  /// Takes the given strategies.
  void assign(const std::vector<int>& choice) {
    assignAll([&](size_t v) { return choice[v]; });
  }

  /// While memory is over the limit somewhere, the node live at the fullest moment whose change
  /// frees memory at the least cost per byte changes.
  /// False when memory cannot be brought within the limit.
  bool repair() {
    while (peak() > limit_) {
      const size_t moment = tree_.argmax();
      int bestNode = -1;
      int bestStrategy = -1;
      double bestRatio = 0;
      for (size_t v = 0; v < choice_.size(); ++v) {
        const auto [lo, hi] = ix_.segments[v];
        if (moment < lo || moment >= hi) continue;
        const auto& node = ix_.problem.nodes[v];
        const int64_t usage = node.usages[static_cast<size_t>(choice_[v])];
        for (int s = 0; s < static_cast<int>(node.costs.size()); ++s) {
          const int64_t freed = usage - node.usages[static_cast<size_t>(s)];
          if (freed <= 0) continue;
          const int64_t delta = moveDelta(static_cast<int>(v), s);
          // A move that brings in an infinite cost comes last, whatever memory it frees.
          const double ratio = static_cast<double>(delta) / static_cast<double>(freed) +
                               (delta >= kNever / 2 ? 1e30 : 0.0);
          if (bestNode < 0 || ratio < bestRatio) {
            bestNode = static_cast<int>(v);
            bestStrategy = s;
            bestRatio = ratio;
          }
        }
      }
      if (bestNode < 0) return false;
      move(bestNode, bestStrategy, moveDelta(bestNode, bestStrategy));
    }
    return true;
  }

  [[nodiscard]] int64_t cost() const { return cost_; }
  [[nodiscard]] const std::vector<int>& choice() const { return choice_; }

 private:
  struct Tree {
    std::vector<int> nodes;     ///< breadth-first; nodes[0] is the root
    std::vector<int> parent;    ///< index into nodes, -1 for the root
    std::vector<Incidence> up;  ///< the edge to the parent, seen from the node
  };

  Tree randomTree(size_t size, int root = -1) {
    Tree tree;
    if (root < 0) root = static_cast<int>(rng_() % choice_.size());
    tree.nodes.push_back(root);
    tree.parent.push_back(-1);
    tree.up.push_back({-1, false});
    // Unmark the previous tree only: clearing every node would cost O(nodes) per move.
    if (inTree_.size() != choice_.size()) inTree_.assign(choice_.size(), -1);
    for (int v : marked_) inTree_[static_cast<size_t>(v)] = -1;
    marked_.clear();
    inTree_[static_cast<size_t>(root)] = 0;
    marked_.push_back(root);
    for (size_t i = 0; i < tree.nodes.size() && tree.nodes.size() < size; ++i) {
      const auto& incident = ix_.incident[static_cast<size_t>(tree.nodes[i])];
      const size_t offset = incident.empty() ? 0 : rng_() % incident.size();
      for (size_t k = 0; k < incident.size() && tree.nodes.size() < size; ++k) {
        const Incidence& inc = incident[(k + offset) % incident.size()];
        const auto& edge = ix_.problem.edges[static_cast<size_t>(inc.edge)];
        const int other = inc.isFrom ? edge.to : edge.from;
        if (inTree_[static_cast<size_t>(other)] >= 0) continue;
        inTree_[static_cast<size_t>(other)] = static_cast<int>(tree.nodes.size());
        marked_.push_back(other);
        tree.nodes.push_back(other);
        tree.parent.push_back(static_cast<int>(i));
        tree.up.push_back({inc.edge, !inc.isFrom});
      }
    }
    return tree;
  }

  [[nodiscard]] static bool isTreeEdge(const Tree& tree, size_t a, size_t b, int edge) {
    return (tree.parent[a] == static_cast<int>(b) && tree.up[a].edge == edge) ||
           (tree.parent[b] == static_cast<int>(a) && tree.up[b].edge == edge);
  }

  /// Cost of an edge from the node's side: `mine` for the node, `theirs` for the other end.
  [[nodiscard]] int64_t pairCost(const Incidence& inc, int mine, int theirs) const {
    const auto& edge = ix_.problem.edges[static_cast<size_t>(inc.edge)];
    const int width = ix_.problem.strategies(edge.to);
    const size_t k = inc.isFrom ? static_cast<size_t>(mine) * width + theirs
                                : static_cast<size_t>(theirs) * width + mine;
    return capped(edge.costs[k]);
  }

  /// The cheapest strategies for the tree's nodes, the rest fixed.
  std::vector<int> solveTree(const Tree& tree) {
    const size_t n = tree.nodes.size();
    std::vector<std::vector<int64_t>> f(n);
    for (size_t i = 0; i < n; ++i) {
      const int v = tree.nodes[i];
      const auto& node = ix_.problem.nodes[static_cast<size_t>(v)];
      f[i].resize(node.costs.size());
      // Where memory is nearly full, the program pays for usage, so it proposes changes that fit.
      const auto [lo, hi] = ix_.segments[static_cast<size_t>(v)];
      const bool crowded =
          lo<hi&& static_cast<double>(tree_.max(lo, hi))> kCrowded * static_cast<double>(limit_);
      for (size_t s = 0; s < node.costs.size(); ++s) {
        int64_t cost = nodeCost(v, static_cast<int>(s));
        if (crowded)
          cost += static_cast<int64_t>(usagePrice_ * static_cast<double>(node.usages[s]));
        for (const Incidence& inc : ix_.incident[static_cast<size_t>(v)]) {
          const auto& edge = ix_.problem.edges[static_cast<size_t>(inc.edge)];
          const int other = inc.isFrom ? edge.to : edge.from;
          const int at = inTree_[static_cast<size_t>(other)];
          // Tree edges are the dynamic program's; an edge closing a cycle inside the tree is
          // priced against the other end's current strategy, from the later node only.
          if (at >= 0 && (isTreeEdge(tree, i, static_cast<size_t>(at), inc.edge) ||
                          static_cast<size_t>(at) > i)) {
            continue;
          }
          cost += pairCost(inc, static_cast<int>(s), choice_[static_cast<size_t>(other)]);
        }
        f[i][s] = cost;
      }
    }
    // Children fold into their parents, deepest first; pick[i][s] is child i's best strategy
    // when its parent takes s.
    std::vector<std::vector<int>> pick(n);
    for (size_t i = n; i-- > 1;) {
      const size_t p = static_cast<size_t>(tree.parent[i]);
      pick[i].resize(f[p].size());
      for (size_t s = 0; s < f[p].size(); ++s) {
        int64_t best = INT64_MAX;
        for (size_t t = 0; t < f[i].size(); ++t) {
          const int64_t cost =
              f[i][t] + pairCost(tree.up[i], static_cast<int>(t), static_cast<int>(s));
          if (cost < best) {
            best = cost;
            pick[i][s] = static_cast<int>(t);
          }
        }
        f[p][s] += best;
      }
    }
    std::vector<int> choice(n);
    choice[0] = static_cast<int>(std::min_element(f[0].begin(), f[0].end()) - f[0].begin());
    for (size_t i = 1; i < n; ++i) {
      choice[i] = pick[i][static_cast<size_t>(choice[static_cast<size_t>(tree.parent[i])])];
    }
    return choice;
  }

  /// Node costs of `nodes` and every edge touching them, each edge once.
  [[nodiscard]] int64_t regionCost(const std::vector<int>& nodes) const {
    int64_t total = 0;
    for (int v : nodes) {
      total += nodeCost(v, choice_[static_cast<size_t>(v)]);
      for (const Incidence& inc : ix_.incident[static_cast<size_t>(v)]) {
        const auto& edge = ix_.problem.edges[static_cast<size_t>(inc.edge)];
        const int other = inc.isFrom ? edge.to : edge.from;
        if (inTree_[static_cast<size_t>(other)] >= 0 && !inc.isFrom)
          continue;  // counted from the other end
        total += edgeCost(inc, choice_[static_cast<size_t>(v)]);
      }
    }
    return total;
  }

  void assignAll(const std::function<int(size_t)>& pick) {
    for (size_t v = 0; v < choice_.size(); ++v) set(static_cast<int>(v), pick(v));
    cost_ = totalCost();
  }

  /// Nodes in index order (the contest's files list them topologically) each take the strategy
  /// cheapest against the neighbours already placed that still fits in memory, or the least
  /// memory when none fits (repair() follows).
  bool greedyStart() {
    const auto& nodes = ix_.problem.nodes;
    for (size_t v = 0; v < nodes.size(); ++v) {
      const auto [lo, hi] = ix_.segments[v];
      const int64_t room = lo < hi ? limit_ - tree_.max(lo, hi) : INT64_MAX;
      int best = -1;
      int64_t bestCost = 0;
      int leanest = 0;
      for (int s = 0; s < static_cast<int>(nodes[v].costs.size()); ++s) {
        const int64_t usage = nodes[v].usages[static_cast<size_t>(s)];
        if (usage < nodes[v].usages[static_cast<size_t>(leanest)]) leanest = s;
        if (usage > room) continue;
        int64_t cost = nodeCost(static_cast<int>(v), s);
        for (const Incidence& inc : ix_.incident[v]) {
          const auto& edge = ix_.problem.edges[static_cast<size_t>(inc.edge)];
          if (choice_[static_cast<size_t>(inc.isFrom ? edge.to : edge.from)] >= 0) {
            cost += edgeCost(inc, s);
          }
        }
        if (best < 0 || cost < bestCost) {
          best = s;
          bestCost = cost;
        }
      }
      set(static_cast<int>(v), best >= 0 ? best : leanest);
    }
    cost_ = totalCost();
    return true;
  }

  /// Re-solves the whole graph tree by tree (a breadth-first spanning forest; edges closing
  /// cycles priced against the current strategies), memory ignored; repair() follows.
  bool forestPass() {
    std::vector<char> done(choice_.size(), 0);
    for (size_t v = 0; v < choice_.size(); ++v) {
      if (done[v]) continue;
      const Tree tree = randomTree(choice_.size(), static_cast<int>(v));
      const std::vector<int> best = solveTree(tree);
      for (size_t i = 0; i < tree.nodes.size(); ++i) {
        set(tree.nodes[i], best[i]);
        done[static_cast<size_t>(tree.nodes[i])] = 1;
      }
    }
    cost_ = totalCost();
    return true;
  }

  bool leastMemoryStart() {
    const auto& nodes = ix_.problem.nodes;
    assignAll([&](size_t v) {
      int best = 0;
      auto key = [&](int s) {
        return std::make_pair(nodes[v].usages[static_cast<size_t>(s)],
                              capped(nodes[v].costs[static_cast<size_t>(s)]));
      };
      for (int s = 1; s < static_cast<int>(nodes[v].costs.size()); ++s) {
        if (key(s) < key(best)) best = s;
      }
      return best;
    });
    return peak() <= ix_.limit;
  }

  /// Cheapest node strategies, then a descent with memory ignored.
  bool cheapStart() {
    const auto& nodes = ix_.problem.nodes;
    assignAll([&](size_t v) {
      const auto& costs = nodes[v].costs;
      return static_cast<int>(std::min_element(costs.begin(), costs.end()) - costs.begin());
    });
    const int64_t limit = limit_;
    limit_ = INT64_MAX / 4;
    std::vector<int> all(choice_.size());
    for (size_t v = 0; v < all.size(); ++v) all[v] = static_cast<int>(all.size() - 1 - v);
    descend(all);
    limit_ = limit;
    return true;
  }

  /// The node's cost under `s`, with infinite as kNever.
  [[nodiscard]] int64_t nodeCost(int v, int s) const {
    return capped(ix_.problem.nodes[static_cast<size_t>(v)].costs[static_cast<size_t>(s)]);
  }

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
    const int cur = choice_[static_cast<size_t>(v)];
    int64_t delta = nodeCost(v, s) - nodeCost(v, cur);
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
    return lo >= hi || tree_.max(lo, hi) + grow <= limit_;
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
      total += nodeCost(static_cast<int>(v), choice_[v]);
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
  int64_t limit_ = ix_.limit;
  UsageTree tree_;
  std::mt19937_64 rng_;
  std::vector<int> choice_;
  int64_t cost_ = 0;
  bool logging_ = false;
  std::vector<std::pair<int, int>> log_;
  std::vector<int> inTree_;   ///< per node: its index in the current tree, or -1
  std::vector<int> marked_;   ///< the nodes inTree_ marks
  std::vector<char> queued_;  ///< descend(): nodes on the worklist
  /// Cost per byte charged in tree moves on nodes live where memory is above kCrowded of the limit.
  double usagePrice_ = 0;
};

}  // namespace autopar::search::local
