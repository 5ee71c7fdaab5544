// Megatron-style tensor parallelism expressed as strategies must cost what Narayanan et al. 2021
// (Sec. 2.3, Fig. 4) state: per transformer layer, two all-reduces in the forward pass (after the
// attention output projection and after the second MLP matmul) and two in the backward pass
// (before the column-parallel QKV and first MLP matmuls), each of b*s*h elements.

#include <gtest/gtest.h>

#include <numeric>

#include "cluster/collective.h"
#include "cost/graph_cost.h"
#include "frontend/transformer.h"
#include "planner/plan_evaluation.h"

namespace autopar {
namespace {

struct LayerAllReduces {
  int forward = 0;
  int backward = 0;
  std::vector<double> seconds;
  std::vector<int64_t> bytesPerDevice;
};

/// All-reduces of activations whose tensor is produced inside `block`.
LayerAllReduces allReducesProducedIn(const ir::Graph& graph, const cost::CostReport& report,
                                     const std::string& block) {
  LayerAllReduces result;
  for (const auto& edge : report.redistributions) {
    if (edge.isGradientSync || edge.producer == ir::kNoOp) continue;
    if (graph.op(edge.producer).block != block) continue;
    for (const auto& step : edge.redistribution.steps) {
      if (step.kind != layout::PrimitiveKind::kAllReduce) continue;
      (edge.direction == cost::EdgeDirection::kForward ? result.forward : result.backward) += 1;
      result.seconds.push_back(step.seconds);
      result.bytesPerDevice.push_back(step.bytesPerDevice);
    }
  }
  return result;
}

void expectMegatronCounts(frontend::TransformerConfig config) {
  constexpr int kTensorParallel = 4;
  config.parallel = ir::ParallelConfig{.tp = kTensorParallel, .dp = 1};
  auto graph = frontend::buildTransformer(config);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  auto four = planner::loadCluster("dgx-a100-80g", 1, kTensorParallel);
  ASSERT_TRUE(four.ok());
  auto evaluated = planner::evaluateModel(planner::LoadedModel{.graph = *graph,
                                                               .source = config.name,
                                                               .microBatch = config.microBatch,
                                                               .sequence = config.seq},
                                          {}, *four);
  ASSERT_TRUE(evaluated.ok()) << evaluated.error().message;
  const cost::CostReport* report = &evaluated->report;
  std::vector<int> ranks(kTensorParallel);
  std::iota(ranks.begin(), ranks.end(), 0);

  // b*s*h elements of bf16 over the 4 tensor-parallel ranks.
  const int64_t elements = config.microBatch * config.seq * config.hidden;
  const double expectedSeconds =
      cluster::collectiveCost(*four, cluster::Collective::kAllReduce, ranks, elements * 2).seconds;
  // A ring all-reduce over p ranks sends 2(p-1)/p of the buffer from each device.
  const int64_t expectedSentBytes = elements * 2 * 2 * (kTensorParallel - 1) / kTensorParallel;
  for (int64_t layer = 0; layer < config.layers; ++layer) {
    const auto counts = allReducesProducedIn(*graph, *report, "llm.layer." + std::to_string(layer));
    EXPECT_EQ(counts.forward, 2) << "layer " << layer;
    EXPECT_EQ(counts.backward, 2) << "layer " << layer;
    for (double seconds : counts.seconds) EXPECT_DOUBLE_EQ(seconds, expectedSeconds);
    for (int64_t bytes : counts.bytesPerDevice) EXPECT_EQ(bytes, expectedSentBytes);
  }
}

frontend::TransformerConfig smallConfig() {
  frontend::TransformerConfig config;
  config.name = "tiny";
  config.layers = 2;
  config.hidden = 1024;
  config.heads = 16;
  config.kvHeads = 16;
  config.ffn = 4096;
  config.vocab = 4096;
  config.seq = 256;
  config.microBatch = 2;
  return config;
}

TEST(MegatronTensorParallel, GptLayerCostsFourAllReducesOfBsh) {
  auto config = smallConfig();
  config.mlp = frontend::TransformerConfig::Mlp::kGeLU;
  config.norm = frontend::TransformerConfig::Norm::kLayerNorm;
  expectMegatronCounts(config);
}

TEST(MegatronTensorParallel, LlamaLayerWithSwiGluAndGqaCostsTheSame) {
  auto config = smallConfig();
  config.kvHeads = 4;
  config.mlp = frontend::TransformerConfig::Mlp::kSwiGLU;
  config.norm = frontend::TransformerConfig::Norm::kRMSNorm;
  expectMegatronCounts(config);
}

}  // namespace
}  // namespace autopar
