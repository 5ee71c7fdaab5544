// Pipeline estimates on a uniform toy model (16 identical MatMul layers, one device per stage,
// links made free so that only the schedule shapes the step):
//   - 1F1B keeps p micro-batches in flight on the first stage and has a bubble of (p-1)/m;
//   - interleaved 1F1B with v chunks per stage has a bubble of (p-1)/(v*m);
//   - GPipe keeps all m micro-batches in flight.

#include "search/op_level/pipeline.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cost/graph_cost.h"
#include "planner/plan_evaluation.h"
#include "rules/graph_sharding.h"
#include "sim/step_estimate.h"

namespace autopar {
namespace {

constexpr int kLayers = 16;

ir::Graph uniformToy() {
  ir::Graph graph("toy");
  ir::TensorId x = *graph.addTensor("x", {{64, 256}, ir::DType::kBF16}, ir::TensorRole::kInput);
  for (int i = 0; i < kLayers; ++i) {
    const std::string name = fmt::format("layer{}", i);
    auto w = graph.addTensor(name + ".weight", {{256, 256}, ir::DType::kBF16},
                             ir::TensorRole::kParameter);
    auto op = graph.addOp(name, ir::OpKind::kMatMul, {}, {x, *w}, {name + ".out"},
                          fmt::format("toy.layer.{}", i));
    x = graph.op(*op).outputs.front();
  }
  return graph;
}

/// One device per stage; links and their latencies cost nothing.
cluster::Cluster freeLinks(int devices) {
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  auto taken = cluster::takeDevices(*cluster, devices);
  for (auto& level : taken->levels) {
    level.bytesPerSecond = 1e30;
    level.latencySeconds = 0;
  }
  return *taken;
}

struct Simulated {
  cost::CostReport report;
  sim::StepEstimate estimate;
};

/// The toy model through the planner (planner::evaluateModel): its stages, schedule and
/// micro-batches as `autopar plan` takes them, one device per stage.
Simulated run(const sim::PipelineShape& config) {
  planner::PlanOptions options;
  options.setup.pp = config.stages;
  options.setup.vpp = config.virtualStages;
  options.training.microBatches = config.microBatches;
  options.setup.schedule = config.schedule;
  auto evaluated =
      planner::evaluateModel(planner::LoadedModel{.graph = uniformToy(), .source = "toy"}, options,
                             freeLinks(config.stages));
  EXPECT_TRUE(evaluated.ok()) << evaluated.error().message;
  return Simulated{std::move(evaluated->report), std::move(evaluated->estimate)};
}

TEST(PipelineEstimate, OneFOneBBubbleAndFirstStageInFlight) {
  for (auto [p, m] : {std::pair{4, 8}, std::pair{8, 32}, std::pair{2, 3}}) {
    const Simulated result = run({p, 1, m, sim::ScheduleKind::k1F1B});
    EXPECT_NEAR(result.estimate.bubbleFraction, static_cast<double>(p - 1) / m, 1e-9);
    EXPECT_EQ(result.estimate.stages.front().peakInFlight, p);
    EXPECT_EQ(result.estimate.stages.back().peakInFlight, 1);
    EXPECT_EQ(result.estimate.stages.front().memory.activationBytes,
              p * result.report.stages.front().memory.activationBytes);
  }
}

TEST(PipelineEstimate, InterleavedBubbleShrinksByTheChunkCount) {
  for (auto [p, v, m] : {std::tuple{4, 2, 8}, std::tuple{2, 4, 4}}) {
    const Simulated result = run({p, v, m, sim::ScheduleKind::kInterleaved});
    EXPECT_NEAR(result.estimate.bubbleFraction, static_cast<double>(p - 1) / (v * m), 1e-9);
  }
}

TEST(PipelineEstimate, GPipeHoldsEveryMicroBatch) {
  const Simulated result = run({4, 1, 8, sim::ScheduleKind::kGPipe});
  for (const auto& stage : result.estimate.stages) EXPECT_EQ(stage.peakInFlight, 8);
  EXPECT_NEAR(result.estimate.bubbleFraction, 3.0 / 8, 1e-9);
}

TEST(PipelineEstimate, StepSplitsIntoComputeCommunicationBubbleAndOptimizer) {
  const Simulated result = run({4, 1, 8, sim::ScheduleKind::k1F1B});
  const sim::StepEstimate& e = result.estimate;
  EXPECT_NEAR(
      e.stepSeconds,
      e.computeSeconds + e.exposedCommunicationSeconds + e.bubbleSeconds + e.optimizerSeconds,
      1e-12);
  EXPECT_GT(e.computeSeconds, 0.0);
}

TEST(PipelineStages, LayersSplitEvenlyAndBlocksMayBePlaced) {
  ir::Graph graph = uniformToy();
  auto even = search::assignStages(graph, 4, 1);
  ASSERT_TRUE(even.ok());
  for (int i = 0; i < kLayers; ++i) EXPECT_EQ(even->virtualStageOf[i], i / 4);
  auto interleaved = search::assignStages(graph, 4, 2);
  ASSERT_TRUE(interleaved.ok());
  EXPECT_EQ(interleaved->stageOf(2), 1);  // virtual stage 1 runs on stage 1
  EXPECT_EQ(interleaved->stageOf(8), 0);  // virtual stage 4 wraps to stage 0, chunk 1

  ir::BlockSettings late;
  late.pipelineStage = 1;
  ASSERT_TRUE(graph.setBlockSettings("toy.layer.10", late).ok());
  auto placed = search::assignStages(graph, 2, 1);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(placed->virtualStageOf[9], 0);
  EXPECT_EQ(placed->virtualStageOf[10], 1);
  EXPECT_EQ(placed->virtualStageOf[15], 1);  // later layers follow their producers

  ir::BlockSettings early;
  early.pipelineStage = 0;
  ASSERT_TRUE(graph.setBlockSettings("toy.layer.12", early).ok());
  auto backwards = search::assignStages(graph, 2, 1);
  ASSERT_FALSE(backwards.ok());
  EXPECT_EQ(backwards.error().message,
            "op 'layer12' (block 'toy.layer.12'): on stage 0 but reads an output of stage 1; a "
            "stage may only read from earlier stages");
  late.pipelineStage = 2;
  ASSERT_TRUE(graph.setBlockSettings("toy.layer.10", late).ok());
  EXPECT_EQ(
      search::assignStages(graph, 2, 1).error().message,
      "block 'toy.layer.10': pipeline_stage 2 is out of range for 2 stage(s) (expected 0..1)");
}

TEST(PipelineStages, InterleavedBlocksNameTheirChunk) {
  // Two stages of two chunks, layers 0-2 on stage 0 chunk 0, 3-6 on stage 1 chunk 0, 7-11 on
  // stage 0 chunk 1 and 12-15 on stage 1 chunk 1: virtual stages 0, 1, 2 and 3.
  ir::Graph graph = uniformToy();
  const auto place = [&](int layer, int stage, int chunk) {
    ir::BlockSettings settings;
    settings.pipelineStage = stage;
    settings.pipelineSegment = chunk;
    ASSERT_TRUE(graph.setBlockSettings(fmt::format("toy.layer.{}", layer), settings).ok());
  };
  for (int i = 0; i < kLayers; ++i) place(i, i < 3 || (i >= 7 && i < 12) ? 0 : 1, i < 7 ? 0 : 1);
  auto placed = search::assignStages(graph, 2, 2);
  ASSERT_TRUE(placed.ok()) << placed.error().message;
  EXPECT_EQ(placed->virtualStageOf[2], 0);
  EXPECT_EQ(placed->virtualStageOf[3], 1);
  EXPECT_EQ(placed->virtualStageOf[7], 2);
  EXPECT_EQ(placed->virtualStageOf[12], 3);
  EXPECT_EQ(placed->stageOf(12), 1);
  place(5, 1, 2);
  EXPECT_EQ(search::assignStages(graph, 2, 2).error().message,
            "block 'toy.layer.5': pipeline_segment 2 is out of range for 2 model chunk(s) per "
            "stage (expected 0..1)");
}

}  // namespace
}  // namespace autopar
