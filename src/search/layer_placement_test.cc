#include "search/layer_placement.h"

#include <gtest/gtest.h>

#include <random>

namespace autopar::search {
namespace {

/// A random problem whose memory limit sits between the leanest and the roomiest layouts, so
/// placement and recompute both matter.
PlacementProblem randomProblem(std::mt19937_64& rng) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  PlacementProblem p;
  p.stages = uniform(1, 4);
  p.layers = uniform(p.stages, 12);
  p.microBatches = uniform(1, 8);
  p.layer.forwardSeconds = static_cast<double>(uniform(1, 5));
  p.layer.backwardSeconds = 2 * p.layer.forwardSeconds;
  p.layer.recomputeSeconds = p.layer.forwardSeconds;
  p.layer.staticBytes = uniform(1, 20);
  p.layer.activationBytes = uniform(5, 40);
  p.layer.recomputedActivationBytes = uniform(1, 4);
  p.first = {static_cast<double>(uniform(0, 6)), uniform(0, 30), uniform(0, 10)};
  p.last = {static_cast<double>(uniform(0, 9)), uniform(0, 30), uniform(0, 10)};
  const int64_t roomy = p.layers * (p.layer.staticBytes + p.stages * p.layer.activationBytes) + 80;
  p.memoryLimitBytes = uniform(roomy / 6, roomy);
  return p;
}

TEST(LayerPlacement, MatchesBruteForceOnSmallProblems) {
  std::mt19937_64 rng(2026);
  int feasible = 0;
  int uneven = 0;
  int recomputing = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const PlacementProblem problem = randomProblem(rng);
    auto exact = placeLayers(problem);
    auto brute = placeLayersBruteForce(problem);
    ASSERT_EQ(exact.ok(), brute.ok()) << "trial " << trial;
    if (!exact.ok()) continue;
    ++feasible;
    EXPECT_DOUBLE_EQ(exact->stepSeconds, brute->stepSeconds) << "trial " << trial;
    int64_t total = 0;
    for (size_t s = 0; s < exact->layers.size(); ++s) {
      total += exact->layers[s];
      EXPECT_GE(exact->layers[s], 1);
      EXPECT_LE(exact->peakBytes[s], problem.memoryLimitBytes);
      recomputing += exact->recomputed[s] > 0;
    }
    EXPECT_EQ(total, problem.layers);
    const auto [lo, hi] = std::minmax_element(exact->layers.begin(), exact->layers.end());
    uneven += *hi - *lo > 1;
  }
  // The instances exercise what the solver is for: many fit, some only unevenly or with
  // recompute.
  EXPECT_GE(feasible, 200);
  EXPECT_GT(uneven, 20);
  EXPECT_GT(recomputing, 20);
}

TEST(LayerPlacement, HeavyLastStageGetsFewerLayers) {
  PlacementProblem p;
  p.layers = 12;
  p.stages = 4;
  p.microBatches = 16;
  p.layer = {1, 2, 1, 1, 1, 1};
  p.last = {9, 0, 0};  // the head costs three layers' worth
  p.memoryLimitBytes = 1000;
  auto placement = placeLayers(p);
  ASSERT_TRUE(placement.ok());
  // The head's stage holds one layer; the other eleven spread 4/4/3 in some order, so no stage
  // takes more than 12 s: step = 45 s of work + 15 waits x 12 s.
  EXPECT_EQ(placement->layers.back(), 1);
  EXPECT_DOUBLE_EQ(placement->stepSeconds, 45 + 15 * 12);
  const auto even = evaluatePlacement(p, {3, 3, 3, 3}, {0, 0, 0, 0});
  EXPECT_DOUBLE_EQ(even.stepSeconds, 45 + 15 * 18);
}

TEST(LayerPlacement, NothingFitsIsNamed) {
  PlacementProblem p;
  p.layers = 4;
  p.stages = 2;
  p.microBatches = 4;
  p.layer = {1, 2, 1, 100, 50, 10};
  p.memoryLimitBytes = 50;
  auto placement = placeLayers(p);
  ASSERT_FALSE(placement.ok());
  EXPECT_NE(placement.error().message.find("no placement of 4 layers on 2 stages fits in 50 bytes"),
            std::string::npos);
  EXPECT_NE(placement.error().message.find("stage 0 needs"), std::string::npos);
}

}  // namespace
}  // namespace autopar::search
