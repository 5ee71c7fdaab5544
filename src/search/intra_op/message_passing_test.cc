#include "search/intra_op/message_passing.h"

#include <gtest/gtest.h>

#include <random>

namespace autopar::search {
namespace {

/// Messages carry forbidden prices (1e13) whose last bits are worth about 1e-3, so bounds are
/// compared to within this.
constexpr double kRounding = 0.01;

/// E(x) = sum_v [c_v(x_v) + price_v m_v(x_v)] + sum_(u,v) c_uv(x_u, x_v), infinite as forbidden.
double energy(const ir::IntraOpProblem& problem, const std::vector<double>& price,
              const std::vector<int>& labels) {
  double total = 0;
  for (size_t v = 0; v < problem.nodes.size(); ++v) {
    const auto s = static_cast<size_t>(labels[v]);
    const int64_t cost = problem.nodes[v].costs[s];
    total += cost >= ir::kInfiniteCost ? MessagePassing::kForbidden : static_cast<double>(cost);
    if (!price.empty()) total += price[v] * static_cast<double>(problem.nodes[v].usages[s]);
  }
  for (const auto& edge : problem.edges) {
    const auto at =
        static_cast<size_t>(labels[static_cast<size_t>(edge.from)] * problem.strategies(edge.to) +
                            labels[static_cast<size_t>(edge.to)]);
    const int64_t cost = edge.costs[at];
    total += cost >= ir::kInfiniteCost ? MessagePassing::kForbidden : static_cast<double>(cost);
  }
  return total;
}

/// min E by enumerating every labelling.
double bruteForceMinimum(const ir::IntraOpProblem& problem, const std::vector<double>& price) {
  std::vector<int> labels(problem.nodes.size(), 0);
  double best = energy(problem, price, labels);
  while (true) {
    size_t v = 0;
    while (v < labels.size() && ++labels[v] == problem.strategies(static_cast<int>(v))) {
      labels[v++] = 0;
    }
    if (v == labels.size()) return best;
    best = std::min(best, energy(problem, price, labels));
  }
}

/// A random problem: a tree over `nodes` nodes plus `extraEdges` edges that close cycles; a
/// `forbidden` share of the edge entries is infinite.
ir::IntraOpProblem randomProblem(std::mt19937_64& rng, int nodes, int extraEdges,
                                 double forbidden) {
  ir::IntraOpProblem problem;
  std::uniform_real_distribution<double> unit(0, 1);
  for (int v = 0; v < nodes; ++v) {
    ir::IntraOpProblem::Node node{0, 1, {}, {}};
    const int count = 1 + static_cast<int>(rng() % 4);
    for (int s = 0; s < count; ++s) {
      node.costs.push_back(static_cast<int64_t>(rng() % 100));
      node.usages.push_back(static_cast<int64_t>(rng() % 20));
    }
    problem.nodes.push_back(node);
  }
  auto addEdge = [&](int from, int to) {
    ir::IntraOpProblem::Edge edge{from, to, {}};
    for (int k = 0; k < problem.strategies(from) * problem.strategies(to); ++k) {
      edge.costs.push_back(unit(rng) < forbidden ? ir::kInfiniteCost
                                                 : static_cast<int64_t>(rng() % 60));
    }
    problem.edges.push_back(edge);
  };
  for (int v = 1; v < nodes; ++v) addEdge(static_cast<int>(rng() % static_cast<uint64_t>(v)), v);
  for (int e = 0; e < extraEdges && nodes > 2; ++e) {
    const int a = static_cast<int>(rng() % static_cast<uint64_t>(nodes));
    const int b = static_cast<int>(rng() % static_cast<uint64_t>(nodes));
    if (a != b) addEdge(std::min(a, b), std::max(a, b));
  }
  return problem;
}

// The header's example: on a chain, two sweeps reach the optimum and an exact bound.
TEST(MessagePassing, HeaderExample) {
  ir::IntraOpProblem chain;
  chain.nodes = {{0, 1, {0, 5}, {0, 0}}, {0, 1, {0, 0}, {0, 0}}};
  chain.edges = {{0, 1, {9, 9, 0, 0}}};
  MessagePassing passing(chain);
  passing.sweep();
  // The first forward pass rounds before any message came back from node 1.
  EXPECT_EQ(passing.labels()[0], 0);
  passing.sweep();
  EXPECT_EQ(passing.labels()[0], 1);
  EXPECT_DOUBLE_EQ(energy(chain, {}, passing.labels()), 5);
  EXPECT_DOUBLE_EQ(passing.lowerBound(), 5);
}

TEST(MessagePassing, SolvesTreesExactly) {
  constexpr int kSweeps = 50;
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    const auto problem = randomProblem(rng, 2 + trial % 8, 0, trial % 2 == 0 ? 0.0 : 0.3);
    std::vector<double> price(problem.nodes.size());
    for (double& p : price) p = static_cast<double>(rng() % 5);
    MessagePassing passing(problem);
    passing.setUsagePrice(price);
    for (int i = 0; i < kSweeps; ++i) passing.sweep();
    const double optimum = bruteForceMinimum(problem, price);
    EXPECT_NEAR(passing.lowerBound(), optimum, kRounding) << "trial " << trial;
    // The labelling is optimal, so forbidden pairs appear only where every labelling has one.
    if (optimum < MessagePassing::kForbidden) {
      EXPECT_DOUBLE_EQ(energy(problem, price, passing.labels()), optimum) << "trial " << trial;
    }
  }
}

TEST(MessagePassing, BoundNeverExceedsTheOptimumOnGraphsWithCycles) {
  std::mt19937_64 rng(12);
  int tight = 0;
  for (int trial = 0; trial < 100; ++trial) {
    const auto problem = randomProblem(rng, 3 + trial % 6, 1 + trial % 4, 0.2);
    std::vector<double> price(problem.nodes.size());
    for (double& p : price) p = static_cast<double>(rng() % 3);
    MessagePassing passing(problem);
    passing.setUsagePrice(price);
    const double optimum = bruteForceMinimum(problem, price);
    double previous = -1e300;
    for (int i = 0; i < 20; ++i) {
      passing.sweep();
      const double bound = passing.lowerBound();
      ASSERT_LE(bound, optimum + kRounding) << "trial " << trial << " sweep " << i;
      previous = bound;
    }
    tight += previous > optimum - kRounding;
  }
  // Small graphs with a cycle or two: the LP relaxation is usually tight.
  EXPECT_GE(tight, 50);
}

TEST(MessagePassing, PricesUsage) {
  // One node, strategies (cost 0, usage 10) and (cost 30, usage 0): a price of 4 per unit makes
  // the second cheaper.
  ir::IntraOpProblem single;
  single.nodes = {{0, 1, {0, 30}, {10, 0}}};
  MessagePassing passing(single);
  passing.sweep();
  EXPECT_EQ(passing.labels()[0], 0);
  passing.setUsagePrice({4});
  passing.sweep();
  EXPECT_EQ(passing.labels()[0], 1);
  EXPECT_DOUBLE_EQ(passing.lowerBound(), 30);
}

}  // namespace
}  // namespace autopar::search
