#include "sim/step_estimate.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace autopar::sim {
namespace {

/// Two stages, one chunk each: forward 1 s (0.25 s of it communication), backward 2 s of
/// compute; stage 0 ends with 0.5 s of exposed gradient sync and a 0.1 s optimizer step.
cost::CostReport twoStageReport() {
  cost::CostReport report;
  report.stages.resize(2);
  for (cost::StageCost& stage : report.stages) {
    stage.forwardSeconds = 1.0;
    stage.forwardComputeSeconds = 0.75;
    stage.backwardSeconds = 2.0;
    stage.backwardComputeSeconds = 2.0;
    stage.optimizerSeconds = 0.1;
  }
  report.stages[0].exposedGradientSyncSeconds = 0.5;
  return report;
}

TEST(StepTimeline, EndsAtTheEstimatedStepWithEachStagesTail) {
  const cost::CostReport report = twoStageReport();
  const PipelineShape config{.stages = 2, .microBatches = 4};
  auto estimate = estimateStep(report, config);
  auto timeline = stepTimeline(report, config);
  ASSERT_TRUE(estimate.ok() && timeline.ok());
  ASSERT_EQ(timeline->size(), 2U);
  double end = 0;
  for (const std::vector<TimelineBlock>& stage : *timeline) {
    ASSERT_FALSE(stage.empty());
    end = std::max(end, stage.back().endSeconds);
    const auto forwards = std::count_if(stage.begin(), stage.end(), [](const TimelineBlock& b) {
      return b.kind == TimelineBlock::kForward;
    });
    EXPECT_EQ(forwards, 4);
    for (const TimelineBlock& block : stage) {
      if (block.kind == TimelineBlock::kForward) {
        EXPECT_DOUBLE_EQ(block.communicationSeconds, 0.25);
      }
      if (block.kind == TimelineBlock::kBackward) {
        EXPECT_DOUBLE_EQ(block.communicationSeconds, 0.0);
      }
    }
  }
  EXPECT_DOUBLE_EQ(end, estimate->stepSeconds);
  // Stage 0's tail: the gradient sync (all communication), then the optimizer step.
  const std::vector<TimelineBlock>& first = timeline->front();
  EXPECT_EQ(first[first.size() - 2].kind, TimelineBlock::kGradientSync);
  EXPECT_DOUBLE_EQ(first[first.size() - 2].communicationSeconds, 0.5);
  EXPECT_EQ(first.back().kind, TimelineBlock::kOptimizer);
  EXPECT_EQ(timeline->back().back().kind, TimelineBlock::kOptimizer);
}

TEST(StepTimeline, RefusesAReportThatDoesNotMatchThePipeline) {
  auto timeline = stepTimeline(twoStageReport(), PipelineShape{.stages = 4, .microBatches = 4});
  ASSERT_FALSE(timeline.ok());
  EXPECT_EQ(timeline.error().message, "stepTimeline: 2 stage costs for 4 stages x 1 chunks");
}

TEST(StepEstimate, ChunksOfAStageShareOneCollectiveBufferAndAddTheirKeptCopies) {
  // Two stages of two interleaved chunks each (chunk k on stage k % 2): each chunk holds a
  // 100-byte collective slot and 30 bytes of parameters kept gathered; stage 0's second chunk's
  // slot is the larger, 150.
  cost::CostReport report;
  report.stages.resize(4);
  for (cost::StageCost& chunk : report.stages) {
    chunk.forwardSeconds = chunk.forwardComputeSeconds = 1.0;
    chunk.backwardSeconds = chunk.backwardComputeSeconds = 2.0;
    chunk.memory.communicationSlotBytes = 100;
    chunk.memory.communicationBytes = 130;
  }
  report.stages[2].memory.communicationSlotBytes = 150;
  report.stages[2].memory.communicationBytes = 180;
  const PipelineShape config{
      .stages = 2, .virtualStages = 2, .microBatches = 2, .schedule = ScheduleKind::kInterleaved};
  auto estimate = estimateStep(report, config);
  ASSERT_TRUE(estimate.ok()) << estimate.error().message;
  EXPECT_EQ(estimate->stages[0].memory.communicationSlotBytes, 150);
  EXPECT_EQ(estimate->stages[0].memory.communicationBytes, 150 + 30 + 30);
  EXPECT_EQ(estimate->stages[1].memory.communicationBytes, 100 + 30 + 30);
}

TEST(StepEstimate, AStageAddsItsChunksOptimizerParallelSavingsAndTraffic) {
  // Chunk k runs on stage k % 2; each saves 10 x (k + 1) bytes and adds k + 1 seconds.
  cost::CostReport report;
  report.stages.resize(4);
  for (size_t k = 0; k < report.stages.size(); ++k) {
    cost::StageCost& chunk = report.stages[k];
    chunk.forwardSeconds = chunk.forwardComputeSeconds = 1.0;
    chunk.backwardSeconds = chunk.backwardComputeSeconds = 2.0;
    chunk.optimizerParallelSavedBytes = 10 * static_cast<int64_t>(k + 1);
    chunk.optimizerParallelCommSeconds = static_cast<double>(k + 1);
  }
  const PipelineShape config{
      .stages = 2, .virtualStages = 2, .microBatches = 2, .schedule = ScheduleKind::kInterleaved};
  auto estimate = estimateStep(report, config);
  ASSERT_TRUE(estimate.ok()) << estimate.error().message;
  EXPECT_EQ(estimate->stages[0].optimizerParallelSavedBytes, 10 + 30);
  EXPECT_EQ(estimate->stages[1].optimizerParallelSavedBytes, 20 + 40);
  EXPECT_DOUBLE_EQ(estimate->stages[0].optimizerParallelCommSeconds, 1.0 + 3.0);
  EXPECT_DOUBLE_EQ(estimate->stages[1].optimizerParallelCommSeconds, 2.0 + 4.0);
}

}  // namespace
}  // namespace autopar::sim
