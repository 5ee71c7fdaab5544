#include "search/analytic_step.h"

#include <gtest/gtest.h>

#include "search/layer_placement.h"

namespace autopar::search {
namespace {

BlockProfile profile() {
  BlockProfile p;
  p.layer.forwardSeconds = 1.0;
  p.layer.backwardSeconds = 2.0;
  p.layer.recomputeSeconds = 0.8;
  p.layer.optimizerSeconds = 0.01;
  p.layer.state = {100, 200, 600};
  p.layer.activationBytes = 50;
  p.layer.recomputedActivationBytes = 5;
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
  c.layers = evenLayers(layers, stages, virtualStages);
  c.recomputed.assign(static_cast<size_t>(stages), 0);
  return c;
}

const GradientSync kNoSync = [](int64_t) { return 0.0; };

TEST(AnalyticStep, EvenLayersFollowThePipelineAssignment) {
  // Layer i on virtual stage floor(i P V / L), virtual stage k on stage k mod P.
  EXPECT_EQ(evenLayers(10, 4), (std::vector<int64_t>{3, 2, 3, 2}));
  EXPECT_EQ(evenLayers(10, 4, 2), (std::vector<int64_t>{4, 2, 2, 2}));
  EXPECT_EQ(evenLayers(80, 8), std::vector<int64_t>(8, 10));
}

TEST(AnalyticStep, OneFOneBMatchesThePlacementModel) {
  // Without data parallelism or sends the closed form is the placement solver's model, plus the
  // optimizer step of the slowest tail.
  for (int64_t stages : {1, 2, 4}) {
    for (int64_t microBatches : {4, 8}) {
      AnalyticCandidate c = candidate(stages, 1, microBatches, 12);
      c.recomputed[0] = 1;
      const AnalyticEstimate estimate = estimateAnalytic(profile(), c, kNoSync);
      PlacementProblem problem;
      problem.layers = 12;
      problem.stages = stages;
      problem.microBatches = microBatches;
      problem.layer = {1.0, 2.0, 0.8, 900, 50, 5};
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
  double previous = 0;
  for (int zero : {0, 1, 2, 3}) {
    c.zero = zero;
    const AnalyticEstimate estimate = estimateAnalytic(profile(), c, sync);
    if (zero >= 2) {
      // Every micro-batch pays the gradient reduce-scatter (and ZeRO 3 the weight gathers).
      EXPECT_GT(estimate.pipelineSeconds, previous);
    }
    previous = estimate.pipelineSeconds;
    EXPECT_GT(estimate.tailSeconds, 0);
  }
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
