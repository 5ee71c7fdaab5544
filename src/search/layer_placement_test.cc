#include "search/layer_placement.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace autopar::search {
namespace {

int64_t sum(const std::vector<int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), int64_t{0});
}

/// A random problem with one or two stacks whose memory limit sits between the leanest and the
/// roomiest layouts, so placement and recompute both matter.
PlacementProblem randomProblem(std::mt19937_64& rng, size_t stacks) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  PlacementProblem p;
  p.stages = uniform(1, 4);
  const int64_t total =
      uniform(std::max(p.stages, static_cast<int64_t>(stacks)), stacks == 1 ? 12 : 10);
  int64_t roomy = 80;
  for (size_t k = 0; k < stacks; ++k) {
    LayerStack stack;
    stack.layers = k + 1 == stacks ? total - p.layers() : uniform(1, total - 1);
    stack.layer.forwardSeconds = static_cast<double>(uniform(1, 5));
    stack.layer.backwardSeconds = 2 * stack.layer.forwardSeconds;
    stack.layer.recomputeSeconds = static_cast<double>(uniform(1, 5));
    stack.layer.staticBytes = uniform(1, 20);
    stack.layer.activationBytes = uniform(5, 40);
    stack.layer.recomputedActivationBytes = uniform(1, 4);
    roomy += stack.layers * (stack.layer.staticBytes + p.stages * stack.layer.activationBytes);
    p.stacks.push_back(stack);
  }
  p.microBatches = uniform(1, 8);
  p.first = {static_cast<double>(uniform(0, 6)), uniform(0, 30), uniform(0, 10)};
  p.last = {static_cast<double>(uniform(0, 9)), uniform(0, 30), uniform(0, 10)};
  p.memoryLimitBytes = uniform(roomy / 6, roomy);
  return p;
}

void checkAgainstBruteForce(size_t stacks, int trials, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int feasible = 0;
  int uneven = 0;
  int recomputing = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const PlacementProblem problem = randomProblem(rng, stacks);
    auto exact = placeLayers(problem);
    auto brute = placeLayersBruteForce(problem);
    ASSERT_EQ(exact.ok(), brute.ok()) << "trial " << trial;
    if (!exact.ok()) continue;
    ++feasible;
    EXPECT_NEAR(exact->stepSeconds, brute->stepSeconds, 1e-9) << "trial " << trial;
    std::vector<int64_t> perStage(static_cast<size_t>(problem.stages), 0);
    for (size_t k = 0; k < stacks; ++k) {
      EXPECT_EQ(sum(exact->layers[k]), problem.stacks[k].layers) << "every layer placed";
      for (size_t s = 0; s < perStage.size(); ++s) {
        perStage[s] += exact->layers[k][s];
        EXPECT_LE(exact->recomputed[k][s], exact->layers[k][s]);
        recomputing += exact->recomputed[k][s] > 0;
      }
    }
    for (size_t s = 0; s < perStage.size(); ++s) {
      EXPECT_GE(perStage[s], 1);
      EXPECT_LE(exact->peakBytes[s], problem.memoryLimitBytes);
    }
    const auto [lo, hi] = std::minmax_element(perStage.begin(), perStage.end());
    uneven += *hi - *lo > 1;
  }
  // The instances exercise what the solver is for: many fit, some only unevenly or with
  // recompute.
  EXPECT_GE(feasible, trials / 2);
  EXPECT_GT(uneven, trials / 20);
  EXPECT_GT(recomputing, trials / 20);
}

TEST(LayerPlacement, MatchesBruteForceOnSmallProblems) { checkAgainstBruteForce(1, 400, 2026); }

TEST(LayerPlacement, MatchesBruteForceWithAVisionTowerAndAnLlm) {
  checkAgainstBruteForce(2, 300, 2027);
}

PlacementProblem oneStack(int64_t layers, int64_t stages, int64_t microBatches, LayerCost layer) {
  PlacementProblem p;
  p.stacks = {{layers, layer}};
  p.stages = stages;
  p.microBatches = microBatches;
  return p;
}

TEST(LayerPlacement, HeavyLastStageGetsFewerLayers) {
  PlacementProblem p = oneStack(12, 4, 16, {1, 2, 1, 1, 1, 1});
  p.last = {9, 0, 0};  // the head costs three layers' worth
  p.memoryLimitBytes = 1000;
  auto placement = placeLayers(p);
  ASSERT_TRUE(placement.ok());
  // The head's stage holds one layer; the other eleven spread 4/4/3 in some order, so no stage
  // takes more than 12 s: step = 45 s of work + 15 waits x 12 s.
  EXPECT_EQ(placement->layers[0].back(), 1);
  EXPECT_DOUBLE_EQ(placement->stepSeconds, 45 + 15 * 12);
  const auto even = evaluatePlacement(p, {{3, 3, 3, 3}}, {{0, 0, 0, 0}});
  EXPECT_DOUBLE_EQ(even.stepSeconds, 45 + 15 * 18);
}

TEST(LayerPlacement, CheapVisionLayersShareTheFirstStage) {
  // 32 vision layers that together take one LLM layer's time, then 15 LLM layers on 4 stages:
  // the vision tower joins the first stage, which takes one LLM layer fewer (12 s per stage).
  PlacementProblem p;
  p.stacks = {{32, {1.0 / 32, 2.0 / 32, 0.02, 1, 1, 1}}, {15, {1, 2, 1, 1, 1, 1}}};
  p.stages = 4;
  p.microBatches = 32;
  p.memoryLimitBytes = 1 << 20;
  auto placement = placeLayers(p);
  ASSERT_TRUE(placement.ok()) << placement.error().message;
  EXPECT_EQ(placement->layers[0], (std::vector<int64_t>{32, 0, 0, 0}));
  EXPECT_EQ(placement->layers[1], (std::vector<int64_t>{3, 4, 4, 4}));
  EXPECT_NEAR(placement->stepSeconds, 48 + 31 * 12, 1e-9);
}

TEST(LayerPlacement, ZeroBubbleHoldsThePeakOnEveryStage) {
  PlacementProblem p = oneStack(8, 4, 16, {1, 2, 1, 10, 5, 1});
  p.memoryLimitBytes = 1000;
  const auto plain = evaluatePlacement(p, {{2, 2, 2, 2}}, {{0, 0, 0, 0}});
  p.zeroBubble = true;
  const auto zeroBubble = evaluatePlacement(p, {{2, 2, 2, 2}}, {{0, 0, 0, 0}});
  // 1F1B: stage s holds 4 - s micro-batches; H1 lets every stage hold 4.
  EXPECT_EQ(plain.peakBytes, (std::vector<int64_t>{60, 50, 40, 30}));
  EXPECT_EQ(zeroBubble.peakBytes, (std::vector<int64_t>{60, 60, 60, 60}));
  // A limit the last stages meet only under 1F1B: H1 has them recompute.
  p.memoryLimitBytes = 55;
  auto placed = placeLayers(p);
  ASSERT_TRUE(placed.ok()) << placed.error().message;
  EXPECT_GT(placed->recomputed[0].back(), 0);
  for (int64_t bytes : placed->peakBytes) EXPECT_LE(bytes, 55);
}

TEST(LayerPlacement, NothingFitsIsNamed) {
  PlacementProblem p = oneStack(4, 2, 4, {1, 2, 1, 100, 50, 10});
  p.memoryLimitBytes = 50;
  auto placement = placeLayers(p);
  ASSERT_FALSE(placement.ok());
  EXPECT_NE(placement.error().message.find("no placement of 4 layers on 2 stages fits in 50 bytes"),
            std::string::npos);
  EXPECT_NE(placement.error().message.find("stage 0 needs"), std::string::npos);
  p.stacks.clear();
  EXPECT_FALSE(placeLayers(p).ok());
}

}  // namespace
}  // namespace autopar::search
