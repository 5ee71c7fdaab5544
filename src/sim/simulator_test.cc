#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <tuple>
#include <utility>

namespace autopar::sim {
namespace {

/// Every stage holds the same layers: per micro-batch, `forwardSeconds` and `backwardSeconds` of
/// work and `activationBytes` kept, split evenly over the stage's model chunks.
SimulationInput uniformInput(const PipelineShape& shape, double forwardSeconds,
                             double backwardSeconds, int64_t activationBytes = 0,
                             double p2pSeconds = 0) {
  const int chunks = shape.virtualStages;
  const StageCosts costs{std::vector<double>(chunks, forwardSeconds / chunks),
                         std::vector<double>(chunks, backwardSeconds / chunks),
                         std::vector<int64_t>(chunks, activationBytes / chunks),
                         {}};
  return SimulationInput{shape, std::vector<StageCosts>(shape.stages, costs),
                         std::vector<double>(shape.stages, p2pSeconds)};
}

SimulationResult simulateOk(const SimulationInput& input) {
  Expected<SimulationResult> result = simulate(input);
  EXPECT_TRUE(result.ok()) << result.error().message;
  return result.ok() ? *result : SimulationResult{};
}

std::string errorOf(const SimulationInput& input) {
  Expected<SimulationResult> result = simulate(input);
  return result.ok() ? "ok" : result.error().message;
}

TEST(Simulator, OneForwardOneBackwardBubbleIsStagesMinusOneOverMicroBatches) {
  const double forward = 1.0;
  const double backward = 2.0;
  for (auto [stages, microBatches] : {std::pair{4, 8}, std::pair{8, 32}}) {
    const PipelineShape shape{.stages = stages, .microBatches = microBatches};
    const SimulationResult result = simulateOk(uniformInput(shape, forward, backward));
    EXPECT_DOUBLE_EQ(result.makespanSeconds, (microBatches + stages - 1) * (forward + backward));
    EXPECT_DOUBLE_EQ(result.idealSeconds, microBatches * (forward + backward));
    EXPECT_DOUBLE_EQ(result.bubbleFraction, (stages - 1.0) / microBatches);
  }
}

TEST(Simulator, OneForwardOneBackwardKeepsStagesMinusSMicroBatchesInFlight) {
  const PipelineShape shape{.stages = 4, .microBatches = 8};
  const SimulationResult result = simulateOk(uniformInput(shape, 1, 2, /*activationBytes=*/100));
  for (int stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(result.stages[stage].peakInFlight, 4 - stage) << stage;
    EXPECT_EQ(result.stages[stage].peakActivationBytes, 100 * (4 - stage)) << stage;
  }
  const SimulationResult few = simulateOk(uniformInput({.stages = 4, .microBatches = 2}, 1, 2));
  EXPECT_EQ(few.stages[0].peakInFlight, 2);
  EXPECT_DOUBLE_EQ(few.makespanSeconds, (2 + 4 - 1) * 3.0);
}

TEST(Simulator, SpansRecordEveryActionAtTheTimesThatGiveTheMakespan) {
  for (ScheduleKind kind : {ScheduleKind::k1F1B, ScheduleKind::kZeroBubbleH1}) {
    const bool zeroBubble = kind == ScheduleKind::kZeroBubbleH1;
    SimulationInput input = uniformInput({.stages = 4, .microBatches = 8, .schedule = kind}, 1, 2,
                                         /*activationBytes=*/0, /*p2pSeconds=*/0.25);
    if (zeroBubble) {
      for (StageCosts& stage : input.stages) stage.weightSeconds = {1.0};
    }
    EXPECT_TRUE(simulateOk(input).stages[0].spans.empty());  // recorded only when asked
    input.recordSpans = true;
    const SimulationResult result = simulateOk(input);
    for (int stage = 0; stage < 4; ++stage) {
      const std::vector<Span>& spans = result.stages[stage].spans;
      ASSERT_EQ(spans.size(), zeroBubble ? 24U : 16U) << stage;  // F and B (and W) of 8
      double busy = 0;
      for (size_t i = 0; i < spans.size(); ++i) {
        busy += spans[i].endSeconds - spans[i].startSeconds;
        if (i > 0) {
          EXPECT_GE(spans[i].startSeconds, spans[i - 1].endSeconds);
        }
      }
      EXPECT_DOUBLE_EQ(busy, result.stages[stage].busySeconds);
      EXPECT_DOUBLE_EQ(spans.back().endSeconds, result.stages[stage].finishSeconds);
    }
    // The last stage's first forward waits for three forwards and three links.
    EXPECT_DOUBLE_EQ(result.stages[3].spans.front().startSeconds, 3 * 1.0 + 3 * 0.25);
  }
}

TEST(Simulator, ZeroBubbleH1ShrinksTheBubbleWithinOneFOneBPeakMemory) {
  // Forward 1 s, backward 2 s of which 1 s is weight gradients (Qi et al.'s F = B = W).
  for (auto [stages, microBatches] : {std::pair{4, 8}, std::pair{8, 32}, std::pair{4, 4}}) {
    PipelineShape shape{.stages = stages, .microBatches = microBatches};
    SimulationInput input = uniformInput(shape, 1, 2, /*activationBytes=*/100);
    const SimulationResult plain = simulateOk(input);
    shape.schedule = ScheduleKind::kZeroBubbleH1;
    input.shape = shape;
    for (StageCosts& stage : input.stages) stage.weightSeconds = {1.0};
    const SimulationResult zeroBubble = simulateOk(input);
    // The paper's ZB-H1 bubble: (p - 1)(F + B - W) = p - 1 against 1F1B's 3 (p - 1).
    EXPECT_DOUBLE_EQ(zeroBubble.makespanSeconds, microBatches * 3.0 + (stages - 1))
        << stages << " stages, " << microBatches << " micro-batches";
    EXPECT_DOUBLE_EQ(zeroBubble.idealSeconds, plain.idealSeconds);
    // The Ws deferred into the bubbles hold their micro-batches longer: every stage may hold as
    // many as 1F1B's first stage, so the pipeline's peak is 1F1B's.
    for (int stage = 0; stage < stages; ++stage) {
      EXPECT_LE(zeroBubble.stages[stage].peakInFlight, std::min(stages, microBatches));
      EXPECT_GE(zeroBubble.stages[stage].peakInFlight, plain.stages[stage].peakInFlight);
    }
    EXPECT_EQ(zeroBubble.stages[0].peakInFlight, plain.stages[0].peakInFlight);
  }
  // Without a weight part, zero-bubble is 1F1B.
  SimulationInput none = uniformInput({.stages = 4, .microBatches = 8}, 1, 2);
  const double plain = simulateOk(none).makespanSeconds;
  none.shape.schedule = ScheduleKind::kZeroBubbleH1;
  EXPECT_DOUBLE_EQ(simulateOk(none).makespanSeconds, plain);
  none.stages[0].weightSeconds = {3.0};
  EXPECT_EQ(errorOf(none), "stages[0].weight_seconds[0]: 3 exceeds the backward's 2");
}

/// Outputs kept to the step's end (torch.distributed.pipelining) add to the held activations at
/// the moment they peak together: under 1F1B the last stage holds one micro-batch in flight and,
/// at its last forward, every micro-batch's output; its first stage peaks when its last forward
/// runs too (4 in flight, 8 outputs kept). Zero-bubble H1's joint peak is found the same way.
TEST(Simulator, KeptOutputsPeakJointlyWithTheActivationsInFlight) {
  for (ScheduleKind kind : {ScheduleKind::k1F1B, ScheduleKind::kZeroBubbleH1}) {
    SimulationInput input = uniformInput({.stages = 4, .microBatches = 8, .schedule = kind}, 1, 2,
                                         /*activationBytes=*/100);
    for (StageCosts& stage : input.stages) {
      stage.keptOutputBytes = {10};
      if (kind == ScheduleKind::kZeroBubbleH1) stage.weightSeconds = {1.0};
    }
    const SimulationResult result = simulateOk(input);
    const StageResult& last = result.stages.back();
    EXPECT_EQ(last.peakKeptOutputBytes, 80) << scheduleName(kind);
    EXPECT_EQ(last.peakActivationBytes, 100 * last.peakInFlight + 80) << scheduleName(kind);
    const StageResult& first = result.stages.front();
    EXPECT_EQ(first.peakActivationBytes, 4 * 100 + 80) << scheduleName(kind);
  }
  SimulationInput wrong = uniformInput({.stages = 2, .microBatches = 2}, 1, 2);
  wrong.stages[1].keptOutputBytes = {1, 2};
  EXPECT_EQ(errorOf(wrong),
            "stages[1].kept_output_bytes: expected 1 entries (one per model chunk), got 2");
}

TEST(Simulator, GPipeKeepsEveryMicroBatchInFlight) {
  const PipelineShape shape{.stages = 4, .microBatches = 8, .schedule = ScheduleKind::kGPipe};
  const SimulationResult result = simulateOk(uniformInput(shape, 1, 2));
  for (const StageResult& stage : result.stages) EXPECT_EQ(stage.peakInFlight, 8);
  // Same bubble as 1F1B: the forwards fill in p-1 steps, the backwards drain in p-1.
  EXPECT_DOUBLE_EQ(result.makespanSeconds, (8 + 4 - 1) * 3.0);
}

TEST(Simulator, InterleavedBubbleShrinksByTheChunkCount) {
  // Narayanan et al. 2021, Sec. 2.2.2: bubble fraction (p - 1) / (v * m).
  for (auto [stages, microBatches, chunks] :
       {std::tuple{4, 8, 2}, std::tuple{4, 16, 4}, std::tuple{8, 32, 2}, std::tuple{4, 4, 2}}) {
    const PipelineShape shape{stages, chunks, microBatches, ScheduleKind::kInterleaved};
    const SimulationResult result = simulateOk(uniformInput(shape, 1, 2));
    const double expected = (stages - 1.0) / (chunks * microBatches);
    EXPECT_NEAR(result.bubbleFraction, expected, 1e-9 * expected) << stages << " " << chunks;
    EXPECT_DOUBLE_EQ(result.idealSeconds, microBatches * 3.0);
  }
}

TEST(Simulator, InterleavedFirstStageHoldsKorthikantiActivationFactor) {
  // Korthikanti et al. 2022, Sec. 4.2.3: the first stage of the interleaved schedule keeps the
  // activations of p micro-batches of its L/p layers times (1 + (p - 1) / (p v)). In chunk units
  // that is its warmup plus one: (p - 1) * 2 + (v - 1) * p + 1 = p v + p - 1 chunks of A / v.
  const int64_t stageActivationBytes = 1200;  // A: one micro-batch through all of a stage's layers
  for (auto [stages, chunks] : {std::pair{4, 2}, std::pair{4, 4}, std::pair{8, 2}}) {
    const PipelineShape shape{stages, chunks, 4 * stages, ScheduleKind::kInterleaved};
    const SimulationResult result = simulateOk(uniformInput(shape, 1, 2, stageActivationBytes));
    EXPECT_EQ(result.stages[0].peakInFlight, (stages - 1) * 2 + (chunks - 1) * stages + 1);
    const double korthikantiBytes =
        stages * stageActivationBytes * (1 + (stages - 1.0) / (stages * chunks));
    EXPECT_DOUBLE_EQ(static_cast<double>(result.stages[0].peakActivationBytes), korthikantiBytes);
  }
}

TEST(Simulator, PointToPointTimeStallsEverySteadyStateRound) {
  // Each link crossing on the critical path costs c. Filling and draining cross 2(p-1) links.
  // In the steady state, B(j) climbs from stage p-1 to stage 0, which then sends F(j+p) back
  // down: 2(p-1) crossings while stage p-1 runs p micro-batches, a stall of 2(p-1)c per p
  // micro-batches; a shorter loop through k+1 stages stalls 2kc per k+1 micro-batches. Packing
  // the m-1 micro-batches after the first into such loops gives 2c * floor((m-1)(p-1)/p).
  const double c = 0.25;
  for (auto [stages, microBatches] : {std::pair{4, 8}, std::pair{8, 32}, std::pair{4, 2}}) {
    const PipelineShape shape{.stages = stages, .microBatches = microBatches};
    const double base = simulateOk(uniformInput(shape, 1, 2)).makespanSeconds;
    const double withLinks = simulateOk(uniformInput(shape, 1, 2, 0, c)).makespanSeconds;
    const int steadyCrossings = (microBatches - 1) * (stages - 1) / stages;
    EXPECT_DOUBLE_EQ(withLinks - base, 2 * c * ((stages - 1) + steadyCrossings))
        << stages << " " << microBatches;
  }
  // Only with m <= 2 is the growth just the fill and drain, 2(p-1)c.
  const PipelineShape two{.stages = 4, .microBatches = 2};
  EXPECT_DOUBLE_EQ(simulateOk(uniformInput(two, 1, 2, 0, c)).makespanSeconds,
                   (2 + 4 - 1) * 3.0 + 2 * 3 * c);
}

TEST(Simulator, UnevenStagesByHand) {
  // Stage 0: F0 0-1, F1 1-2, B0 8-10 (B0 of stage 1 ends at 7.5, +0.5 link), B1 14-16.
  // Stage 1: F0 1.5-3.5, B0 3.5-7.5, F1 7.5-9.5, B1 9.5-13.5.
  SimulationInput input{
      {.stages = 2, .microBatches = 2}, {{{1}, {2}, {10}, {}}, {{2}, {4}, {20}, {}}}, {0.5, 0.5}};
  const SimulationResult result = simulateOk(input);
  EXPECT_DOUBLE_EQ(result.makespanSeconds, 16);
  EXPECT_DOUBLE_EQ(result.stages[1].finishSeconds, 13.5);
  EXPECT_DOUBLE_EQ(result.idealSeconds, 12);
  EXPECT_DOUBLE_EQ(result.bubbleSeconds, 4);
  EXPECT_DOUBLE_EQ(result.bubbleFraction, 1.0 / 3);
  EXPECT_EQ(result.stages[0].peakActivationBytes, 20);
  EXPECT_EQ(result.stages[1].peakActivationBytes, 20);
}

TEST(Simulator, CyclicWaitIsReportedAsDeadlock) {
  // Each stage's own order is fine, but stage 0 waits for B0 from stage 1, which waits for F1
  // from stage 0, which comes after B0.
  const SimulationInput input = uniformInput({.stages = 2, .microBatches = 2}, 1, 2);
  const Action f0{Action::kForward, 0, 0};
  const Action f1{Action::kForward, 1, 0};
  const Action b0{Action::kBackward, 0, 0};
  const Action b1{Action::kBackward, 1, 0};
  Expected<SimulationResult> result = simulateSchedule(input, {{f0, b0, f1, b1}, {f1, b1, f0, b0}});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "schedule deadlocks: stage 0 waits forever at action 1 (B0)");
}

TEST(Simulator, InputErrorsNameTheField) {
  const PipelineShape shape{4, 2, 8, ScheduleKind::kInterleaved};
  SimulationInput input = uniformInput(shape, 1, 2);
  EXPECT_EQ(errorOf(input), "ok");
  input.stages[1].forwardSeconds.pop_back();
  EXPECT_EQ(errorOf(input),
            "stages[1].forward_seconds: expected 2 entries (one per model chunk), got 1");
  input = uniformInput(shape, 1, 2);
  input.stages[2].backwardSeconds[1] = -1;
  EXPECT_EQ(errorOf(input), "stages[2].backward_seconds[1]: expected a finite time >= 0, got -1");
  input = uniformInput(shape, 1, 2);
  input.p2pSeconds.resize(3);
  EXPECT_EQ(errorOf(input), "p2p_seconds: expected 4 entries (one per pipeline stage), got 3");
  input.p2pSeconds.clear();  // free links
  EXPECT_EQ(errorOf(input), "ok");
  input.stages.pop_back();
  EXPECT_EQ(errorOf(input), "stages: expected 4 entries (one per pipeline stage), got 3");
  input.shape.microBatches = 6;
  EXPECT_EQ(errorOf(input),
            "micro_batches: 6 is not a multiple of the 4 pipeline stages, which the interleaved "
            "schedule needs");
}

}  // namespace
}  // namespace autopar::sim
