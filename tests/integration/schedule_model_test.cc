// The closed form's schedule model (search/layer_level/schedule_model.h) against the event
// simulator (sim/simulator.h), which it stands in for inside the hybrid search:
//   - the peak rows give every stage's activation peak, with chunks of any size, exactly as the
//     simulator's action-by-action count does (1F1B and interleaved), and never less than it
//     under zero-bubble H1 (which the closed form counts at 1F1B's first-stage peak everywhere);
//   - on even stages its step is the simulator's makespan for 1F1B, interleaved and ZB-H1;
//   - on uneven stages it stays near the simulator's makespan under ZB-H1, and interleaved while
//     each stage's chunks are balanced, which is why the layer placement keeps them so
//     (search/layer_level/layer_placement.h): with chunks far apart it is off by much more.

#include "search/layer_level/schedule_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>

#include "sim/simulator.h"

namespace autopar {
namespace {

/// Every stage with the same forward, backward and weight-gradient time per chunk, and random
/// activation bytes per chunk.
sim::SimulationInput randomInput(std::mt19937_64& rng, ir::Schedule schedule, int stages,
                                 int chunks, int microBatches) {
  sim::SimulationInput input;
  input.shape = {stages, chunks, microBatches, schedule};
  for (int s = 0; s < stages; ++s) {
    sim::StageCosts costs;
    for (int c = 0; c < chunks; ++c) {
      costs.forwardSeconds.push_back(1.0 / chunks);
      costs.backwardSeconds.push_back(2.0 / chunks);
      costs.weightSeconds.push_back(1.0 / chunks);
      costs.activationBytes.push_back(static_cast<int64_t>(1 + rng() % 1000));
    }
    input.stages.push_back(costs);
  }
  return input;
}

int64_t rowsPeak(const std::vector<std::vector<int64_t>>& rows,
                 const std::vector<int64_t>& chunkBytes) {
  int64_t peak = 0;
  for (const auto& row : rows) {
    int64_t held = 0;
    for (size_t c = 0; c < row.size(); ++c) held += row[c] * chunkBytes[c];
    peak = std::max(peak, held);
  }
  return peak;
}

TEST(ScheduleModel, PeakRowsGiveTheSimulatorsActivationPeaks) {
  std::mt19937_64 rng(2032);
  for (auto schedule :
       {ir::Schedule::k1F1B, ir::Schedule::kInterleaved, ir::Schedule::kZeroBubbleH1}) {
    const bool interleaved = schedule == ir::Schedule::kInterleaved;
    for (int stages : {2, 3, 4, 8}) {
      for (int chunks : interleaved ? std::vector<int>{2, 3} : std::vector<int>{1}) {
        for (int rounds : {1, 2, 3, 5}) {
          const int microBatches = interleaved ? stages * rounds : stages + rounds - 1;
          const sim::SimulationInput input =
              randomInput(rng, schedule, stages, chunks, std::max(microBatches, 1));
          auto simulated = sim::simulate(input);
          ASSERT_TRUE(simulated.ok()) << simulated.error().message;
          for (int s = 0; s < stages; ++s) {
            const std::vector<int64_t>& bytes = input.stages[s].activationBytes;
            const std::vector<double> chunkBytes(bytes.begin(), bytes.end());
            const auto rows =
                search::peakRows(schedule, stages, chunks, input.shape.microBatches, s);
            const int64_t closed = rowsPeak(rows, bytes);
            EXPECT_EQ(
                static_cast<int64_t>(search::peakActivationBytes(
                    schedule, stages, chunks, input.shape.microBatches, s, chunkBytes.data())),
                closed);
            const int64_t peak = simulated->stages[s].peakActivationBytes;
            const std::string where =
                fmt::format("P {} V {} m {} stage {}", stages, chunks, input.shape.microBatches, s);
            if (schedule == ir::Schedule::kZeroBubbleH1) {
              EXPECT_LE(peak, closed) << where;
            } else {
              EXPECT_EQ(peak, closed) << where;
            }
          }
        }
      }
    }
  }
}

TEST(ScheduleModel, StepMatchesTheSimulatorOnEvenStages) {
  std::mt19937_64 rng(2033);
  const int stages = 4;
  for (auto schedule :
       {ir::Schedule::k1F1B, ir::Schedule::kInterleaved, ir::Schedule::kZeroBubbleH1}) {
    const int chunks = schedule == ir::Schedule::kInterleaved ? 2 : 1;
    for (int microBatches : {4, 8, 16}) {
      const sim::SimulationInput input = randomInput(rng, schedule, stages, chunks, microBatches);
      auto simulated = sim::simulate(input);
      ASSERT_TRUE(simulated.ok()) << simulated.error().message;
      // Each stage: 1 s forward, 2 s backward of which 1 s weight gradients, over its chunks.
      search::PipelineClock clock(schedule, chunks, microBatches, stages, 0.0);
      for (int s = 0; s < stages; ++s) clock.addStage(3.0, 1.0);
      EXPECT_NEAR(clock.seconds(), simulated->makespanSeconds, 1e-9)
          << "m " << microBatches << " schedule " << static_cast<int>(schedule);
    }
  }
}

/// Relative errors of the closed-form step against the simulator on random uneven stages.
struct Errors {
  double mean = 0;
  double max = 0;
};

/// Stages of 7 to 9 layers (3 s each: 1 s forward, 2 s backward of which 1 s weight gradients),
/// the last with a head of 0 to 2 layers' time and no weight gradients; interleaved over two
/// chunks, split as evenly as whole layers allow (`balanced`) or anywhere.
Errors unevenStageErrors(ir::Schedule schedule, bool balanced, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int chunks = schedule == ir::Schedule::kInterleaved ? 2 : 1;
  Errors errors;
  const int trials = 400;
  for (int trial = 0; trial < trials; ++trial) {
    const int stages = 2 << (rng() % 3);
    const int microBatches = stages * static_cast<int>(1 + rng() % 4);
    sim::SimulationInput input;
    input.shape = {stages, chunks, microBatches, schedule};
    search::PipelineClock clock(schedule, chunks, microBatches, stages, 0.0);
    for (int s = 0; s < stages; ++s) {
      const int layers = 7 + static_cast<int>(rng() % 3);
      const double head = s == stages - 1 ? 3.0 * static_cast<double>(rng() % 3) : 0.0;
      std::vector<int> split{layers};
      if (chunks == 2) {
        const int first = balanced ? (layers + 1) / 2 : 1 + static_cast<int>(rng() % (layers - 1));
        split = {first, layers - first};
      }
      sim::StageCosts costs;
      for (int c = 0; c < chunks; ++c) {
        const double extra = c == chunks - 1 ? head : 0.0;
        costs.forwardSeconds.push_back(split[c] + extra / 3);
        costs.backwardSeconds.push_back(2.0 * split[c] + 2 * extra / 3);
        costs.weightSeconds.push_back(split[c]);
        costs.activationBytes.push_back(1);
      }
      input.stages.push_back(costs);
      clock.addStage(3.0 * layers + head, layers);
    }
    auto simulated = sim::simulate(input);
    EXPECT_TRUE(simulated.ok()) << simulated.error().message;
    if (!simulated.ok()) return errors;
    const double error =
        std::abs(clock.seconds() - simulated->makespanSeconds) / simulated->makespanSeconds;
    errors.mean += error / trials;
    errors.max = std::max(errors.max, error);
  }
  return errors;
}

TEST(ScheduleModel, StepStaysNearTheSimulatorOnUnevenStages) {
  const Errors zeroBubble = unevenStageErrors(ir::Schedule::kZeroBubbleH1, true, 2035);
  const Errors oneFOneB = unevenStageErrors(ir::Schedule::k1F1B, true, 2036);
  const Errors balanced = unevenStageErrors(ir::Schedule::kInterleaved, true, 2037);
  const Errors anywhere = unevenStageErrors(ir::Schedule::kInterleaved, false, 2038);
  EXPECT_LT(zeroBubble.mean, 0.03) << "max " << zeroBubble.max;
  EXPECT_LT(oneFOneB.mean, 0.03) << "max " << oneFOneB.max;
  EXPECT_LT(balanced.mean, 0.03) << "max " << balanced.max;
  // Chunks split anywhere: the closed form's bubble no longer holds.
  EXPECT_GT(anywhere.mean, 2 * balanced.mean);
  EXPECT_GT(anywhere.max, 0.2);
  std::cout << fmt::format(
      "closed form against the simulator, mean (max) relative error, %: ZB-H1 {:.2f} ({:.2f}), "
      "1F1B "
      "{:.2f} ({:.2f}), interleaved with balanced chunks {:.2f} ({:.2f}), with chunks anywhere "
      "{:.2f} ({:.2f})\n",
      100 * zeroBubble.mean, 100 * zeroBubble.max, 100 * oneFOneB.mean, 100 * oneFOneB.max,
      100 * balanced.mean, 100 * balanced.max, 100 * anywhere.mean, 100 * anywhere.max);
}

}  // namespace
}  // namespace autopar
