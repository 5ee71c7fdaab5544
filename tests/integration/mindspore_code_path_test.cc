// MindSpore's code path as a MindFormers run yaml sets it: the copies of
// micro_batch_interleave_num hide each other's model-parallel communication.

#include <gtest/gtest.h>

#include "frontend/model_presets.h"
#include "frontend/transformer.h"
#include "planner/plan_evaluation.h"

namespace autopar {
namespace {

/// LLaMA2-7B with two layers, tensor parallel over a node of 8 Ascend devices, run as
/// `copies` interleaved copies.
cost::CostReport tensorParallelOnAscend(int64_t copies) {
  auto config = frontend::transformerPreset("llama2-7b");
  EXPECT_TRUE(config.ok());
  config->layers = 2;
  config->microBatch = 2;
  config->parallel = ir::ParallelConfig{.tp = 8, .dp = 1};
  auto graph = frontend::buildTransformer(*config);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  auto cluster = planner::loadCluster("ascend-910b-node", 1, 8);
  EXPECT_TRUE(cluster.ok());
  planner::PlanOptions options;
  options.training.interleavedCopies = copies;
  auto evaluated = planner::evaluateModel(
      planner::LoadedModel{std::move(*graph), "llama2-7b", 2, config->seq}, options, *cluster);
  EXPECT_TRUE(evaluated.ok()) << evaluated.error().message;
  return evaluated->report;
}

TEST(MindSporeCodePath, InterleavedCopiesHideTheTensorParallelCommunication) {
  const cost::StageCost one = tensorParallelOnAscend(1).stages.front();
  const cost::StageCost two = tensorParallelOnAscend(2).stages.front();
  // One copy's all-reduces run under the other's compute: what is left exposed is what
  // outlasts the compute of the pass.
  EXPECT_GT(one.forwardCommSeconds, 0.0);
  EXPECT_LT(two.forwardCommSeconds, one.forwardCommSeconds);
  EXPECT_LT(two.backwardCommSeconds, one.backwardCommSeconds);
  EXPECT_EQ(two.forwardComputeSeconds, one.forwardComputeSeconds);
}

}  // namespace
}  // namespace autopar
