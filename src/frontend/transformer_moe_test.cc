// The mixture-of-experts layer of the transformer builder: ops, shapes, annotations with expert
// parallelism, FLOPs scaled by top-k, and the checks on experts and their parallel degree.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/transformer.h"
#include "ir/op_kind.h"

namespace autopar::frontend {
namespace {

using Config = TransformerConfig;

/// LLaMA-style, 4 experts of width 96, 2 per token: 8 * 2 / 4 = 4 slots per sample and expert.
Config tinyMixtral() {
  Config config;
  config.name = "tiny-mixtral";
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.kvHeads = 2;
  config.ffn = 96;
  config.vocab = 128;
  config.seq = 8;
  config.microBatch = 4;
  config.experts = 4;
  config.topK = 2;
  return config;
}

const ir::Op& opNamed(const ir::Graph& graph, const std::string& name) {
  auto id = graph.findOp(name);
  EXPECT_TRUE(id) << "no op " << name;
  return graph.op(id.value_or(0));
}

ir::Shape outputShape(const ir::Graph& graph, const std::string& name) {
  return graph.tensor(opNamed(graph, name).outputs.front()).type.shape;
}

std::string errorOf(const Config& config) {
  auto graph = buildTransformer(config);
  return graph ? "<ok>" : graph.error().message;
}

TEST(TransformerMoE, LayerRoutesDispatchesRunsExpertsAndCombines) {
  auto graph = buildTransformer(tinyMixtral());
  ASSERT_TRUE(graph) << graph.error().message;
  std::vector<std::string> names;
  for (const ir::Op& op : graph->ops()) {
    if (op.block == "llm.layer.1" && op.name.starts_with("layer1.m")) names.push_back(op.name);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"layer1.mlp_norm", "layer1.moe.router", "layer1.moe.dispatch",
                                      "layer1.moe.experts.gate_proj", "layer1.moe.experts.up_proj",
                                      "layer1.moe.experts.act", "layer1.moe.experts.mul",
                                      "layer1.moe.experts.down_proj", "layer1.moe.combine",
                                      "layer1.mlp.residual"}));
  EXPECT_EQ(outputShape(*graph, "layer1.moe.router"), (ir::Shape{4, 8, 4}));
  EXPECT_EQ(outputShape(*graph, "layer1.moe.dispatch"), (ir::Shape{4, 4, 4, 64}));
  EXPECT_EQ(outputShape(*graph, "layer1.moe.experts.up_proj"), (ir::Shape{4, 4, 4, 96}));
  EXPECT_EQ(outputShape(*graph, "layer1.moe.combine"), (ir::Shape{4, 8, 64}));
  const auto weight = graph->findTensor("layer1.moe.experts.down_proj.weight");
  ASSERT_TRUE(weight);
  EXPECT_EQ(graph->tensor(*weight).type.shape, (ir::Shape{4, 96, 64}));
  EXPECT_EQ(opNamed(*graph, "layer1.moe.combine").attrs.topK, 2);
  EXPECT_FALSE(graph->findOp("layer1.mlp.gate_proj"));
  EXPECT_EQ(graph->parameterCount(), transformerParameterCount(tinyMixtral()));
}

// Each token runs 2 of the 4 experts: the experts' FLOPs are twice a dense MLP's, whatever the
// expert count.
TEST(TransformerMoE, ExpertFlopsScaleWithTopK) {
  Config dense = tinyMixtral();
  dense.experts = 0;
  dense.topK = 0;
  auto denseGraph = buildTransformer(dense);
  auto moeGraph = buildTransformer(tinyMixtral());
  ASSERT_TRUE(denseGraph && moeGraph);
  for (const char* linear : {"gate_proj", "up_proj", "down_proj"}) {
    const double denseFlops =
        denseGraph->forwardFlops(opNamed(*denseGraph, std::string("layer0.mlp.") + linear));
    const double expertFlops =
        moeGraph->forwardFlops(opNamed(*moeGraph, std::string("layer0.moe.experts.") + linear));
    EXPECT_EQ(expertFlops, 2 * denseFlops) << linear;
  }
  Config eight = tinyMixtral();
  eight.experts = 8;
  auto eightGraph = buildTransformer(eight);
  ASSERT_TRUE(eightGraph) << eightGraph.error().message;
  EXPECT_EQ(eightGraph->forwardFlops(opNamed(*eightGraph, "layer0.moe.experts.up_proj")),
            moeGraph->forwardFlops(opNamed(*moeGraph, "layer0.moe.experts.up_proj")));
}

// dp 4 with ep 2 and tp 2, sequence parallel: the experts split over ep out of dp.
TEST(TransformerMoE, ExpertParallelAnnotations) {
  Config config = tinyMixtral();
  config.parallel = ir::ParallelConfig{.tp = 2, .dp = 4, .ep = 2, .sequenceParallel = true};
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(opNamed(*graph, "layer0.moe.router").shard, (ir::StrategyCuts{{4, 2, 1}, {1, 1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.moe.dispatch").shard, (ir::StrategyCuts{{4, 2, 1}, {4, 2, 1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.moe.experts.gate_proj").shard,
            (ir::StrategyCuts{{2, 2, 1, 1}, {2, 1, 2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.moe.experts.mul").shard,
            (ir::StrategyCuts{{2, 2, 1, 2}, {2, 2, 1, 2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.moe.experts.down_proj").shard,
            (ir::StrategyCuts{{2, 2, 1, 2}, {2, 2, 1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.moe.combine").shard,
            (ir::StrategyCuts{{4, 1, 2, 1}, {4, 2, 1}}));
}

TEST(TransformerMoE, ChecksExpertsAndTheirParallelism) {
  Config config = tinyMixtral();
  config.parallel = ir::ParallelConfig{.dp = 4, .ep = 3};
  EXPECT_EQ(errorOf(config), "tiny-mixtral: parallel.ep: 3 does not divide the 4 experts");
  config.parallel = ir::ParallelConfig{.dp = 2, .ep = 4};
  EXPECT_EQ(errorOf(config),
            "tiny-mixtral: parallel.ep: 4 does not divide dataParallel 2 (expert parallelism "
            "is carved out of the data-parallel ranks)");
  config = tinyMixtral();
  config.topK = 5;
  EXPECT_EQ(errorOf(config),
            "tiny-mixtral: topK: 5 experts per token of 4: expected 1 to the experts");
  config = tinyMixtral();
  config.experts = 0;
  config.topK = 0;
  config.parallel = ir::ParallelConfig{.ep = 2};
  EXPECT_EQ(errorOf(config), "tiny-mixtral: parallel.ep: 2 needs experts; the model is dense");
  // 8 tokens x 2 / 4 experts = 4 slots, which tp 8 with sequence parallelism cannot cut.
  config = tinyMixtral();
  config.seq = 16;
  config.heads = 8;
  config.kvHeads = 8;
  config.ffn = 128;
  config.parallel = ir::ParallelConfig{.tp = 8, .dp = 1, .sequenceParallel = true};
  config.experts = 8;
  config.topK = 2;
  EXPECT_EQ(errorOf(config),
            "tiny-mixtral: seq: 4 slots per expert (seq x topK / experts) do not divide by the 8 "
            "sequence cuts (contextParallel x sequence-parallel tp)");
}

}  // namespace
}  // namespace autopar::frontend
