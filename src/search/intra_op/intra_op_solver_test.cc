#include "search/intra_op/intra_op_solver.h"

#include <gtest/gtest.h>

#include <random>

namespace autopar::search {
namespace {

/// Solver options without the brace list, which leaves the later fields to warnings.
SolveOptions solveOptions(double seconds, int64_t iterations, uint64_t seed, int threads) {
  SolveOptions options;
  options.timeLimitSeconds = seconds;
  options.iterations = iterations;
  options.seed = seed;
  options.threads = threads;
  return options;
}

/// The IOPDDL contest's example (shared/data/iopddl/example.json).
ir::IntraOpProblem contestExample() {
  ir::IntraOpProblem p;
  p.name = "example";
  p.nodes = {{30, 70, {15}, {10}},
             {40, 70, {55, 65}, {25, 25}},
             {50, 120, {25, 45, 35}, {15, 20, 15}},
             {110, 140, {85, 75}, {10, 10}},
             {110, 150, {95}, {15}}};
  p.edges = {{0, 1, {30, 40}},
             {0, 2, {50, 10, 40}},
             {1, 3, {90, 10, 20, 80}},
             {2, 4, {60, 20, 30}},
             {3, 4, {70, 60}}};
  p.usageLimit = 50;
  return p;
}

TEST(IntraOpSolvers, ContestExampleOptimum) {
  const auto problem = contestExample();
  const SolveResult brute = solveBruteForce(problem);
  ASSERT_TRUE(brute.optimal);
  auto ilp = solveIlp(problem, {});
  ASSERT_TRUE(ilp.ok()) << ilp.error().message;
  EXPECT_TRUE(ilp->optimal);
  EXPECT_EQ(ilp->evaluation.cost, brute.evaluation.cost);
  auto local = solveLocalSearch(problem, solveOptions(0.5, 200, 1, 1));
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->evaluation.cost, brute.evaluation.cost);
  EXPECT_TRUE(local->evaluation.feasible);
}

// intra_op_lagrangian.h's example: the unconstrained optimum (415) needs 55 of the 50 units on
// [50, 70); the dual prices that segment up to the optimum, 445, and the bound is tight.
TEST(IntraOpSolvers, LagrangianBoundIsTightOnTheContestExample) {
  auto local = solveLocalSearch(contestExample(), solveOptions(5, 100, 1, 1));
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->evaluation.cost, 445);
  EXPECT_EQ(local->solution, (std::vector<int>{0, 0, 2, 1, 0}));
  EXPECT_DOUBLE_EQ(local->lowerBound, 445);
  EXPECT_NE(local->status.find("Lagrangian lower bound 445 (gap 0.00%)"), std::string::npos)
      << local->status;
}

TEST(IntraOpSolvers, EvaluationCountsHalfOpenIntervals) {
  auto problem = contestExample();
  // Nodes 0, 1 and 2 are live together on [50, 70); nodes 2, 3 and 4 on [110, 120).
  auto evaluation = ir::evaluateSolution(problem, {0, 0, 0, 0, 0});
  ASSERT_TRUE(evaluation.ok());
  EXPECT_EQ(evaluation->peakUsage, 10 + 25 + 15);
  EXPECT_EQ(evaluation->cost, 15 + 55 + 25 + 85 + 95 + 30 + 50 + 90 + 60 + 70);
  EXPECT_EQ(ir::evaluateSolution(problem, {0, 0}).error().message,
            "solution: expected 5 strategies (one per node), got 2");
  EXPECT_EQ(ir::evaluateSolution(problem, {0, 2, 0, 0, 0}).error().message,
            "solution[1]: strategy 2 is outside 0..1");
}

/// A random problem of `nodes` nodes with at most `maxCombinations` strategy combinations.
ir::IntraOpProblem randomProblem(std::mt19937_64& rng, int nodes, int64_t maxCombinations) {
  ir::IntraOpProblem p;
  int64_t combinations = 1;
  for (int v = 0; v < nodes; ++v) {
    int count = 1 + static_cast<int>(rng() % 3);
    while (combinations * count > maxCombinations) --count;
    combinations *= count;
    ir::IntraOpProblem::Node node;
    node.start = static_cast<int64_t>(rng() % 20);
    node.end = node.start + static_cast<int64_t>(rng() % 10);
    for (int s = 0; s < count; ++s) {
      node.costs.push_back(static_cast<int64_t>(rng() % 100));
      node.usages.push_back(static_cast<int64_t>(rng() % 20));
    }
    p.nodes.push_back(node);
  }
  for (int v = 1; v < nodes; ++v) {
    const int u = static_cast<int>(rng() % static_cast<uint64_t>(v));
    ir::IntraOpProblem::Edge edge{u, v, {}};
    for (int k = 0; k < p.strategies(u) * p.strategies(v); ++k) {
      edge.costs.push_back(static_cast<int64_t>(rng() % 60));
    }
    p.edges.push_back(edge);
  }
  p.usageLimit = static_cast<int64_t>(10 + rng() % 50);
  return p;
}

TEST(IntraOpSolvers, IlpMatchesBruteForceOnTwoHundredRandomProblems) {
  std::mt19937_64 rng(2025);
  int feasible = 0;
  int localOptimal = 0;
  int boundTight = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const auto problem = randomProblem(rng, 1 + trial % 12, 20000);
    const SolveResult brute = solveBruteForce(problem);
    auto ilp = solveIlp(problem, solveOptions(10, 0, 1, 1));
    ASSERT_TRUE(ilp.ok()) << ilp.error().message;
    ASSERT_EQ(ilp->solution.empty(), brute.solution.empty()) << "trial " << trial;
    auto local = solveLocalSearch(problem, solveOptions(1, 300, 7, 1));
    ASSERT_TRUE(local.ok());
    // The portfolio starts CBC from the local search's solution.
    auto portfolio = solvePortfolio(problem, solveOptions(10, 20, 3, 1));
    ASSERT_TRUE(portfolio.ok());
    ASSERT_EQ(portfolio->solution.empty(), brute.solution.empty()) << "trial " << trial;
    if (!brute.solution.empty()) {
      EXPECT_EQ(portfolio->evaluation.cost, brute.evaluation.cost) << "trial " << trial;
    }
    ASSERT_EQ(local->solution.empty(), brute.solution.empty()) << "trial " << trial;
    if (brute.solution.empty()) continue;
    ++feasible;
    EXPECT_TRUE(ilp->optimal) << "trial " << trial;
    EXPECT_EQ(ilp->evaluation.cost, brute.evaluation.cost) << "trial " << trial;
    EXPECT_TRUE(local->evaluation.feasible) << "trial " << trial;
    EXPECT_GE(local->evaluation.cost, brute.evaluation.cost);
    EXPECT_LE(local->lowerBound, static_cast<double>(brute.evaluation.cost)) << "trial " << trial;
    localOptimal += local->evaluation.cost == brute.evaluation.cost;
    boundTight += local->lowerBound == static_cast<double>(brute.evaluation.cost);
  }
  EXPECT_GE(feasible, 200);
  // The local search is a heuristic; on problems this small it should nearly always reach the
  // optimum.
  EXPECT_GE(localOptimal, feasible * 9 / 10);
  RecordProperty("local_search_optimal", localOptimal);
  RecordProperty("lagrangian_bound_tight", boundTight);
  // The Lagrangian bound is exact on most of these small trees.
  EXPECT_GE(boundTight, feasible / 2);
  RecordProperty("feasible", feasible);
}

TEST(IntraOpSolvers, InfeasibleLimitIsReported) {
  auto problem = contestExample();
  problem.usageLimit = 20;  // nodes 0, 1 and 2 alone need 10 + 25 + 15
  auto ilp = solveIlp(problem, {});
  ASSERT_TRUE(ilp.ok());
  EXPECT_TRUE(ilp->solution.empty());
  EXPECT_EQ(ilp->status, "infeasible: no choice of strategies keeps memory within the usage limit");
  auto local = solveLocalSearch(problem, solveOptions(0.2, 10, 1, 1));
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(local->solution.empty());
}

TEST(IntraOpSolvers, LocalSearchIsDeterministicForASeedAndIterationBudget) {
  std::mt19937_64 rng(7);
  const auto problem = randomProblem(rng, 12, 1 << 20);
  auto first = solveLocalSearch(problem, solveOptions(30, 500, 3, 2));
  auto second = solveLocalSearch(problem, solveOptions(30, 500, 3, 2));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->solution, second->solution);
}

}  // namespace
}  // namespace autopar::search
