#include "search/layer_level/analytic_step.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "search/layer_level/layer_placement.h"

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
  c.schedule = virtualStages > 1 ? ir::Schedule::kInterleaved : ir::Schedule::k1F1B;
  c.layers = evenLayers({layers}, stages, virtualStages);
  c.recomputed = zerosLike(c.layers);
  return c;
}

const GradientSync kNoSync = [](int64_t, ReplicaGroup) { return 0.0; };

TEST(AnalyticStep, EvenLayersFollowThePipelineAssignment) {
  // Layer i on virtual stage floor(i P V / L), virtual stage k on stage k mod P as chunk k / P.
  EXPECT_EQ(evenLayers({10}, 4), (StackCounts{{3, 2, 3, 2}}));
  EXPECT_EQ(evenLayers({10}, 4, 2), (StackCounts{{2, 1, 1, 1, 2, 1, 1, 1}}));
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

/// A pipeline runtime that keeps every micro-batch's stage output (torch.distributed.pipelining)
/// adds, per stage, the micro-batches times its chunks' outputs: the boundary activation, or on
/// the last virtual stage the logits. Nothing without a pipeline.
TEST(AnalyticStep, KeptOutputsAddEveryMicroBatchsOutputPerChunk) {
  BlockProfile keeping = profile();
  keeping.keptBoundaryBytes = 10;
  keeping.keptHeadBytes = 100;
  for (int64_t virtualStages : {1, 2}) {
    const AnalyticCandidate c = candidate(2, virtualStages, 4, 12);
    const AnalyticEstimate plain = estimateAnalytic(profile(), c, kNoSync);
    const AnalyticEstimate kept = estimateAnalytic(keeping, c, kNoSync);
    const int64_t chunks = virtualStages;
    EXPECT_EQ(kept.peakBytes[0] - plain.peakBytes[0], 4 * chunks * 10);
    EXPECT_EQ(kept.peakBytes[1] - plain.peakBytes[1], 4 * ((chunks - 1) * 10 + 100));
  }
  const AnalyticCandidate one = candidate(1, 1, 4, 12);
  EXPECT_EQ(estimateAnalytic(keeping, one, kNoSync).peakBytes,
            estimateAnalytic(profile(), one, kNoSync).peakBytes);
}

TEST(AnalyticStep, InterleavingShrinksTheBubbleAndHoldsMoreInFlight) {
  const AnalyticEstimate plain = estimateAnalytic(profile(), candidate(4, 1, 8, 16), kNoSync);
  const AnalyticEstimate interleaved = estimateAnalytic(profile(), candidate(4, 2, 8, 16), kNoSync);
  // 1F1B: m T_max + (sum T - T_max); interleaved divides the second term by V.
  // Stage times: 4 layers x 3 s, plus the ends (1 s on stage 0, 2 s on stage 3).
  EXPECT_NEAR(plain.pipelineSeconds, 8 * 14.0 + (13 + 12 + 12 + 14 - 14), 1e-9);
  EXPECT_NEAR(interleaved.pipelineSeconds, 8 * 14.0 + (13 + 12 + 12 + 14 - 14) / 2.0, 1e-9);
  // Stage 0 holds 2 (P - 1) + (V - 1) P + 1 = 11 chunk-micro-batches against 4 micro-batches:
  // at worst 8 of chunk 0 (2 layers and the embedding's 7 bytes) and 3 of chunk 1
  // (search/layer_level/schedule_model.h).
  EXPECT_GT(interleaved.peakBytes[0], plain.peakBytes[0]);
  EXPECT_EQ(plain.peakBytes[0], 4 * 900 + 360 + 4 * (4 * 50 + 7));
  EXPECT_EQ(interleaved.peakBytes[0], 4 * 900 + 360 + 8 * (2 * 50 + 7) + 3 * 2 * 50);
}

TEST(AnalyticStep, ZeroBubbleMatchesTheSimulatorOnEvenStages) {
  // No ends, 1 s forward, 2 s backward of which 1 s weight gradients: the simulator's (and Qi et
  // al.'s) ZB-H1 makespan m (F + B) + (P - 1)(F + B - 2W) = 8 x 3 + 3 x 1 (sim/simulator_test).
  BlockProfile p = profile();
  p.layers[0].weightGradientSeconds = 1.0;
  p.first = {};
  p.last = {};
  AnalyticCandidate c = candidate(4, 1, 8, 4);
  c.schedule = ir::Schedule::kZeroBubbleH1;
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
  const GradientSync sync = [](int64_t bytes, ReplicaGroup) {
    return static_cast<double>(bytes) / 1000;
  };
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

// A mixture-of-experts layer: a tenth of its state is replicated over DP 8, the experts' state
// over DP 8 / EP 4 = 2 only.
TEST(AnalyticStep, ExpertStateShardsAndSyncsOverItsOwnReplicas) {
  BlockProfile p = profile();
  p.layers[0].state = {10, 20, 60};
  p.layers[0].expertState = {90, 180, 540};
  AnalyticCandidate c = candidate(1, 1, 4, 4);
  c.dp = 8;
  c.expertDp = 2;
  std::map<ReplicaGroup, int64_t> synced;
  const GradientSync sync = [&](int64_t bytes, ReplicaGroup group) {
    synced[group] += bytes;
    return static_cast<double>(bytes) / 1000;
  };
  c.zero = 1;
  const AnalyticEstimate sharded = estimateAnalytic(p, c, sync);
  // Once per step: the layers' and ends' 4 x 20 + 80 + 80 dense gradient bytes over DP, the 4 x
  // 180 expert gradient bytes over the experts' replicas; and ZeRO 1's gather of the updated
  // weights, the layers' 4 x 10 and the ends' 40 + 40 dense bytes and 4 x 90 expert bytes, each
  // over its own replicas.
  EXPECT_EQ(synced[ReplicaGroup::kData], 240 + 40 + 40 + 40);
  EXPECT_EQ(synced[ReplicaGroup::kExpertData], 720 + 360);
  // ZeRO 1: the experts' optimizer states over 2, the others over 8 (shards rounded up).
  c.zero = 0;
  const AnalyticEstimate whole = estimateAnalytic(p, c, sync);
  const int64_t saved = 4 * (60 - 8) + 2 * (240 - 30) + 4 * (540 - 270);
  EXPECT_EQ(whole.peakBytes[0] - sharded.peakBytes[0], saved);
  // Expert parallelism as wide as DP leaves the experts unreplicated: nothing to sync or shard.
  synced.clear();
  c.expertDp = 1;
  c.zero = 1;
  const AnalyticEstimate unreplicated = estimateAnalytic(p, c, sync);
  EXPECT_EQ(synced.count(ReplicaGroup::kExpertData), 0U);
  EXPECT_EQ(unreplicated.peakBytes[0] - sharded.peakBytes[0], 4 * (540 / 2));
  EXPECT_LT(unreplicated.tailSeconds, sharded.tailSeconds);
}

/// A random profile (one stack) with weight gradients, sends and ends, and a candidate shape of
/// up to 4 stages over which its layers place.
std::pair<BlockProfile, AnalyticCandidate> randomShape(std::mt19937_64& rng,
                                                       ir::Schedule schedule) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  const auto part = [&](ProfiledPart& p) {
    p.forwardSeconds = 0.25 * static_cast<double>(uniform(1, 8));
    p.backwardSeconds = 2 * p.forwardSeconds;
    p.weightGradientSeconds = std::min(p.forwardSeconds, p.backwardSeconds / 2);
    p.recomputeSeconds = p.forwardSeconds;
    p.optimizerSeconds = 0.01;
    p.state = {uniform(1, 40), uniform(1, 80), uniform(1, 240)};
    p.activationBytes = uniform(5, 60);
    p.recomputedActivationBytes = uniform(1, 5);
  };
  BlockProfile profile;
  profile.layers.resize(1);
  part(profile.layers[0]);
  part(profile.first);
  part(profile.last);
  profile.sendSeconds = 0.125 * static_cast<double>(uniform(0, 2));
  profile.bufferBytes = uniform(0, 50);
  AnalyticCandidate c;
  c.schedule = schedule;
  c.stages = uniform(2, 4);
  c.virtualStages = schedule == ir::Schedule::kInterleaved ? 2 : 1;
  c.microBatches = c.stages * uniform(1, 3);
  c.dp = uniform(1, 4);
  c.expertDp = 1;
  c.zero = static_cast<int>(uniform(0, 1));
  return {profile, c};
}

// The placement optimises the closed form's pipeline: the placed plan's closed form gives back
// the placement's step and peaks (plus the buffers), for each schedule.
TEST(AnalyticStep, PlacementObjectiveIsTheClosedForm) {
  std::mt19937_64 rng(2031);
  for (ir::Schedule schedule :
       {ir::Schedule::k1F1B, ir::Schedule::kZeroBubbleH1, ir::Schedule::kInterleaved}) {
    int placed = 0;
    for (int trial = 0; trial < 60; ++trial) {
      auto [profile, c] = randomShape(rng, schedule);
      const int64_t layers = c.stages * c.virtualStages + static_cast<int64_t>(rng() % 9);
      const int64_t deviceBytes = 2000 + static_cast<int64_t>(rng() % 4000);
      auto problem = placementProblemOf(profile, c, {layers}, deviceBytes);
      ASSERT_TRUE(problem.ok()) << problem.error().message;
      auto placement = placeLayers(*problem);
      if (!placement.ok()) continue;
      ++placed;
      c.layers = placement->layers;
      c.recomputed = placement->recomputed;
      const AnalyticEstimate estimate = estimateAnalytic(profile, c, kNoSync);
      EXPECT_NEAR(estimate.pipelineSeconds, placement->stepSeconds, 1e-12 * placement->stepSeconds)
          << "trial " << trial;
      ASSERT_EQ(estimate.peakBytes.size(), placement->peakBytes.size());
      for (size_t s = 0; s < estimate.peakBytes.size(); ++s) {
        EXPECT_EQ(estimate.peakBytes[s], placement->peakBytes[s] + profile.bufferBytes)
            << "trial " << trial << " stage " << s;
        EXPECT_LE(estimate.peakBytes[s], deviceBytes);
      }
    }
    EXPECT_GT(placed, 20);
  }
}

TEST(AnalyticStep, PlacementModelsZeroZeroAndOneOnly) {
  AnalyticCandidate c = candidate(2, 1, 4, 8);
  c.zero = 2;
  auto problem = placementProblemOf(profile(), c, {8}, 1 << 20);
  ASSERT_FALSE(problem.ok());
  EXPECT_NE(problem.error().message.find("ZeRO 2"), std::string::npos);
}

}  // namespace
}  // namespace autopar::search
