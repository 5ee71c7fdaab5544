#include "search/analytic_step.h"

#include <gtest/gtest.h>

#include "search/layer_placement.h"

namespace autopar::search {
namespace {

BlockProfile profile() {
  BlockProfile p;
  ProfiledPart layer;
  layer.forwardSeconds = 1.0;
  layer.backwardSeconds = 2.0;
  layer.recomputeSeconds = 0.8;
  layer.optimizerSeconds = 0.01;
  layer.state = {100, 200, 600};
  layer.activationBytes = 50;
  layer.recomputedActivationBytes = 5;
  p.layers = {layer};
  p.first.forwardSeconds = 0.5;
  p.first.backwardSeconds = 0.5;
  p.first.state = {40, 80, 240};
  p.first.activationBytes = 7;
  p.last.forwardSeconds = 1.0;
  p.last.backwardSeconds = 1.0;
  p.last.state = {40, 80, 240};
  p.last.activationBytes = 11;
  return p;
}

AnalyticCandidate candidate(int64_t stages, int64_t virtualStages, int64_t microBatches,
                            int64_t layers) {
  AnalyticCandidate c;
  c.stages = stages;
  c.virtualStages = virtualStages;
  c.microBatches = microBatches;
  c.schedule = virtualStages > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
  c.layers = evenLayers({layers}, stages, virtualStages);
  c.recomputed = {std::vector<int64_t>(static_cast<size_t>(stages), 0)};
  return c;
}

const GradientSync kNoSync = [](int64_t) { return 0.0; };

TEST(AnalyticStep, EvenLayersFollowThePipelineAssignment) {
  // Layer i on virtual stage floor(i P V / L), virtual stage k on stage k mod P.
  EXPECT_EQ(evenLayers({10}, 4), (StackCounts{{3, 2, 3, 2}}));
  EXPECT_EQ(evenLayers({10}, 4, 2), (StackCounts{{4, 2, 2, 2}}));
  EXPECT_EQ(evenLayers({80}, 8), StackCounts{std::vector<int64_t>(8, 10)});
  // Two stacks split as one run of 12: positions 0-3 are the first stack's.
  EXPECT_EQ(evenLayers({4, 8}, 3), (StackCounts{{4, 0, 0}, {0, 4, 4}}));
}

TEST(AnalyticStep, BalancedLayersSplitByTime) {
  // 32 vision layers at a fiftieth of an LLM layer's time fit on the first stage with a few LLM
  // layers; the rest split evenly by time.
  BlockProfile p = profile();
  ProfiledPart vision = p.layers[0];
  vision.forwardSeconds /= 50;
  vision.backwardSeconds /= 50;
  p.layers.insert(p.layers.begin(), vision);
  p.first.forwardSeconds = p.first.backwardSeconds = 0;
  p.last.forwardSeconds = p.last.backwardSeconds = 0;
  const StackCounts counts = balancedLayers({32, 16}, p, 4);
  EXPECT_EQ(counts[0], (std::vector<int64_t>{32, 0, 0, 0}));
  EXPECT_EQ(counts[1], (std::vector<int64_t>{4, 4, 4, 4}));
  // Every stage keeps a layer, however the time falls.
  const StackCounts tight = balancedLayers({2, 3}, p, 5);
  for (size_t s = 0; s < 5; ++s) EXPECT_EQ(tight[0][s] + tight[1][s], 1);
}

TEST(AnalyticStep, OneFOneBMatchesThePlacementModel) {
  // Without data parallelism or sends the closed form is the placement solver's model, plus the
  // optimizer step of the slowest tail.
  for (int64_t stages : {1, 2, 4}) {
    for (int64_t microBatches : {4, 8}) {
      AnalyticCandidate c = candidate(stages, 1, microBatches, 12);
      c.recomputed[0][0] = 1;
      const AnalyticEstimate estimate = estimateAnalytic(profile(), c, kNoSync);
      PlacementProblem problem;
      problem.stacks = {{12, {1.0, 2.0, 0.8, 900, 50, 5}}};
      problem.stages = stages;
      problem.microBatches = microBatches;
      problem.first = {1.0, 360, 7};
      problem.last = {2.0, 360, 11};
      const Placement placement = evaluatePlacement(problem, c.layers, c.recomputed);
      EXPECT_NEAR(estimate.pipelineSeconds, placement.stepSeconds, 1e-9)
          << stages << " stages, " << microBatches << " micro-batches";
      EXPECT_EQ(estimate.peakBytes, placement.peakBytes);
    }
  }
}

TEST(AnalyticStep, InterleavingShrinksTheBubbleAndHoldsMoreInFlight) {
  const AnalyticEstimate plain = estimateAnalytic(profile(), candidate(4, 1, 8, 16), kNoSync);
  const AnalyticEstimate interleaved = estimateAnalytic(profile(), candidate(4, 2, 8, 16), kNoSync);
  // 1F1B: m T_max + (sum T - T_max); interleaved divides the second term by V.
  // Stage times: 4 layers x 3 s, plus the ends (1 s on stage 0, 2 s on stage 3).
  EXPECT_NEAR(plain.pipelineSeconds, 8 * 14.0 + (13 + 12 + 12 + 14 - 14), 1e-9);
  EXPECT_NEAR(interleaved.pipelineSeconds, 8 * 14.0 + (13 + 12 + 12 + 14 - 14) / 2.0, 1e-9);
  // Stage 0 holds (2 (P - 1) + (V - 1) P + 1) / V = 11 / 2 micro-batches of its layers against 4.
  EXPECT_GT(interleaved.peakBytes[0], plain.peakBytes[0]);
  EXPECT_EQ(plain.peakBytes[0], 4 * 900 + 360 + 4 * (4 * 50 + 7));
  EXPECT_EQ(interleaved.peakBytes[0], 4 * 900 + 360 + (4 * 50 + 7) * 11 / 2);
}

TEST(AnalyticStep, ZeroBubbleMatchesTheSimulatorOnEvenStages) {
  // No ends, 1 s forward, 2 s backward of which 1 s weight gradients: the simulator's (and Qi et
  // al.'s) ZB-H1 makespan m (F + B) + (P - 1)(F + B - 2W) = 8 x 3 + 3 x 1 (sim/simulator_test).
  BlockProfile p = profile();
  p.layers[0].weightGradientSeconds = 1.0;
  p.first = {};
  p.last = {};
  AnalyticCandidate c = candidate(4, 1, 8, 4);
  c.schedule = PipelineSchedule::kZeroBubbleH1;
  const AnalyticEstimate estimate = estimateAnalytic(p, c, kNoSync);
  EXPECT_NEAR(estimate.pipelineSeconds, 27.0, 1e-9);
  // Every stage may hold as many micro-batches as 1F1B's first stage.
  for (int64_t bytes : estimate.peakBytes) EXPECT_EQ(bytes, 900 + 4 * 50);
}

TEST(AnalyticStep, ZeroShardsStateAndAddsTraffic) {
  const StateBytes state{100, 200, 600};
  EXPECT_EQ(state.sharded(0, 4), 900);
  EXPECT_EQ(state.sharded(1, 4), 100 + 200 + 150);
  EXPECT_EQ(state.sharded(2, 4), 100 + 50 + 150);
  EXPECT_EQ(state.sharded(3, 4), 25 + 50 + 150);
  // All-reducing 1000 gradient bytes takes a second.
  const GradientSync sync = [](int64_t bytes) { return static_cast<double>(bytes) / 1000; };
  AnalyticCandidate c = candidate(1, 1, 4, 4);
  c.dp = 4;
  std::vector<AnalyticEstimate> byZero;
  for (int zero : {0, 1, 2, 3}) {
    c.zero = zero;
    byZero.push_back(estimateAnalytic(profile(), c, sync));
    EXPECT_GT(byZero.back().tailSeconds, 0);
  }
  // One stage with both ends: 4 x 200 + 80 + 80 = 960 gradient bytes. ZeRO 2 reduce-scatters
  // them in each of the 4 micro-batches: 4 x 0.96 / 2 s more.
  EXPECT_NEAR(byZero[1].pipelineSeconds, byZero[0].pipelineSeconds, 1e-9);
  EXPECT_NEAR(byZero[2].pipelineSeconds - byZero[1].pipelineSeconds, 4 * 0.48, 1e-9);
  // ZeRO 3 gathers the 4 x 100 weight bytes for forward and again for backward in each of the 4
  // micro-batches (each gather half an all-reduce: 4 x 2 x 0.4 / 2 s), and keeps no gathered
  // copies beyond the two layers in flight.
  EXPECT_NEAR(byZero[3].pipelineSeconds - byZero[2].pipelineSeconds, 4 * 0.4, 1e-9);
  EXPECT_LT(byZero[3].peakBytes[0], byZero[2].peakBytes[0] + 400);
  // Recomputed layers gather their 400 weight bytes once more every micro-batch: 4 x 0.4 / 2 s.
  c.recomputed = c.layers;
  c.zero = 2;
  const AnalyticEstimate recomputedTwo = estimateAnalytic(profile(), c, sync);
  c.zero = 3;
  const AnalyticEstimate recomputedThree = estimateAnalytic(profile(), c, sync);
  EXPECT_NEAR(recomputedThree.pipelineSeconds - recomputedTwo.pipelineSeconds, 4 * (0.4 + 0.2),
              1e-9);
}

TEST(AnalyticStep, FullRecomputeTradesTimeForMemory) {
  AnalyticCandidate c = candidate(2, 1, 8, 8);
  const AnalyticEstimate kept = estimateAnalytic(profile(), c, kNoSync);
  c.recomputed = c.layers;
  const AnalyticEstimate recomputed = estimateAnalytic(profile(), c, kNoSync);
  EXPECT_GT(recomputed.stepSeconds, kept.stepSeconds);
  EXPECT_LT(recomputed.peak(), kept.peak());
}

}  // namespace
}  // namespace autopar::search
