// MindSpore's code path as a MindFormers run yaml sets it: micro_batch_interleave_num runs the
// graph once per copy of the micro-batch, each copy's model-parallel communication under another
// copy's compute.

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
  auto evaluated = planner::evaluateModel(planner::LoadedModel{.graph = std::move(*graph),
                                                               .source = "llama2-7b",
                                                               .microBatch = 2,
                                                               .sequence = config->seq},
                                          options, *cluster);
  EXPECT_TRUE(evaluated.ok()) << evaluated.error().message;
  return evaluated->report;
}

TEST(MindSporeCodePath, InterleavedCopiesRunTheGraphOncePerCopyAndHideTheirCommunication) {
  const cost::CostReport oneReport = tensorParallelOnAscend(1);
  const cost::CostReport twoReport = tensorParallelOnAscend(2);
  const cost::StageCost& one = oneReport.stages.front();
  const cost::StageCost& two = twoReport.stages.front();
  // The graph is one copy: two copies compute twice and keep twice the activations...
  EXPECT_DOUBLE_EQ(two.forwardComputeSeconds, 2 * one.forwardComputeSeconds);
  EXPECT_DOUBLE_EQ(two.backwardComputeSeconds, 2 * one.backwardComputeSeconds);
  EXPECT_EQ(twoReport.memory.activationBytes, 2 * oneReport.memory.activationBytes);
  // ...but hold one set of model states,
  EXPECT_EQ(twoReport.memory.parameterBytes, oneReport.memory.parameterBytes);
  EXPECT_EQ(twoReport.memory.optimizerBytes, oneReport.memory.optimizerBytes);
  // and one copy's all-reduces run under the other's compute: what stays exposed is what
  // outlasts a pass's compute, less than twice one copy's.
  EXPECT_GT(one.forwardCommSeconds, 0.0);
  EXPECT_LT(two.forwardCommSeconds, 2 * one.forwardCommSeconds);
  EXPECT_LT(two.backwardCommSeconds, 2 * one.backwardCommSeconds);
}

}  // namespace
}  // namespace autopar
