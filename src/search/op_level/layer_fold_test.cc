#include "search/op_level/layer_fold.h"

#include <gtest/gtest.h>

#include "cluster/cluster.h"
#include "search/op_level/driver.h"
#include "search/op_level/ilp.h"
#include "search/op_level/propagation.h"

namespace autopar::search {
namespace {

using ir::DType;
using ir::OpKind;
using ir::TensorRole;

/// `layers` residual blocks "stack.layer.<i>" (MatMul, GeLU, MatMul, Add) between an input and a
/// head; the block `odd` (if any) has a ReLU where the others have a GeLU.
ir::Graph stackGraph(int layers, int odd = -1) {
  ir::Graph graph("stack");
  const int64_t width = 1024;
  ir::TensorId current = *graph.addTensor("x", {{64, width}, DType::kBF16}, TensorRole::kInput);
  for (int i = 0; i < layers; ++i) {
    const std::string block = "stack.layer." + std::to_string(i);
    const std::string name = "layer" + std::to_string(i);
    auto up =
        *graph.addTensor(name + ".up", {{width, 4 * width}, DType::kBF16}, TensorRole::kParameter);
    auto down = *graph.addTensor(name + ".down", {{4 * width, width}, DType::kBF16},
                                 TensorRole::kParameter);
    auto fc1 =
        *graph.addOp(name + ".fc1", OpKind::kMatMul, {}, {current, up}, {name + ".h"}, block);
    auto act = *graph.addOp(name + ".act", i == odd ? OpKind::kReLU : OpKind::kGeLU, {},
                            {graph.op(fc1).outputs[0]}, {name + ".a"}, block);
    auto fc2 = *graph.addOp(name + ".fc2", OpKind::kMatMul, {}, {graph.op(act).outputs[0], down},
                            {name + ".y"}, block);
    auto add = *graph.addOp(name + ".residual", OpKind::kAdd, {},
                            {graph.op(fc2).outputs[0], current}, {name + ".out"}, block);
    current = graph.op(add).outputs[0];
  }
  auto head =
      *graph.addTensor("head.weight", {{width, 32000}, DType::kBF16}, TensorRole::kParameter);
  (void)graph.addOp("head", OpKind::kMatMul, {}, {current, head}, {"logits"}, "head");
  return graph;
}

TEST(LayerFold, KeepsTheFirstTwoLayersAndWeighsTheSecondByTheCopiesItStandsFor) {
  const ir::Graph graph = stackGraph(8);
  auto fold = foldRepeatedLayers(graph);
  ASSERT_TRUE(fold.has_value());
  EXPECT_EQ(fold->graph.ops().size(), 2u * 4 + 1);
  ASSERT_EQ(fold->summary.size(), 1u);
  EXPECT_EQ(fold->summary[0], "stack.layer: 8 layers, those after the first alike: decided as 2");
  // Layer 5's ops are decided by layer 1's; layer 0 and the head by themselves.
  const ir::OpId fc1Of5 = *graph.findOp("layer5.fc1");
  const ir::OpId fc1Of1 = *fold->graph.findOp("layer1.fc1");
  EXPECT_EQ(fold->representative[fc1Of5], fc1Of1);
  EXPECT_EQ(fold->representative[*graph.findOp("layer0.fc1")], *fold->graph.findOp("layer0.fc1"));
  EXPECT_EQ(fold->copies.of(fc1Of1), 7);
  EXPECT_EQ(fold->copies.of(*fold->graph.findOp("layer0.fc1")), 1);
  const ir::OpId head = *fold->graph.findOp("head");
  EXPECT_EQ(fold->copies.of(head), 1);
  // The head reads layer 1's output, which stands for the last layer's.
  EXPECT_EQ(fold->graph.tensor(fold->graph.op(head).inputs[0]).name, "layer1.out");
  // Unfolding gives every op its representative's cuts.
  std::vector<rules::FactorCuts> foldedCuts(fold->graph.ops().size());
  for (const ir::Op& op : fold->graph.ops()) foldedCuts[op.id] = {op.id + 1};
  const auto cuts = unfoldCuts(*fold, foldedCuts);
  ASSERT_EQ(cuts.size(), graph.ops().size());
  EXPECT_EQ(cuts[fc1Of5], rules::FactorCuts{fc1Of1 + 1});
}

TEST(LayerFold, LeavesStacksWhoseLaterLayersDifferOrThatAreTooShort) {
  EXPECT_FALSE(foldRepeatedLayers(stackGraph(8, /*odd=*/5)).has_value());
  EXPECT_FALSE(foldRepeatedLayers(stackGraph(2)).has_value());
  // The first layer may differ: it keeps its own decision.
  EXPECT_TRUE(foldRepeatedLayers(stackGraph(8, /*odd=*/0)).has_value());
}

// The folded search decides each layer once; its plan, priced on the whole graph, is no worse
// than 2% above the plan the search makes over the whole graph, and the searched graph is the
// fold's.
TEST(LayerFold, ShardingPropagationOverTheFoldMatchesTheWholeGraphsPlan) {
  const ir::Graph graph = stackGraph(12);
  const cluster::Cluster cluster = *cluster::clusterPreset("dgx-h100");
  const std::vector<int> ranks{0, 1, 2, 3, 4, 5, 6, 7};
  SearchRequest request;
  request.mode = SearchMode::kShardingPropagation;
  auto folded = searchStrategies(graph, ranks, cluster, request);
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  ASSERT_FALSE(folded->explanation.empty());
  EXPECT_EQ(folded->explanation.front(),
            "stack.layer: 12 layers, those after the first alike: decided as 2");
  auto whole = propagateStrategies(graph, ranks, cluster, {});
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  auto objective = [&](const std::vector<rules::FactorCuts>& cuts) {
    std::vector<rules::ShardedOp> shards;
    for (const ir::Op& op : graph.ops()) {
      shards.push_back(
          *rules::applyFactorCuts(*rules::shardingRuleFor(graph, op), cuts[op.id], ranks));
    }
    EdgeCostCache edges(cluster, {});
    return *assignmentSeconds(graph, shards, cluster,
                              cost::shippedCostModel()->forDevice(cluster.device.name), edges);
  };
  std::vector<rules::FactorCuts> foldedCuts;
  for (const auto& op : folded->sharding.ops) foldedCuts.push_back(op.cuts);
  EXPECT_LE(objective(foldedCuts), objective(whole->cuts) * 1.02);
  // Every layer after the first took layer 1's decision.
  for (int i = 2; i < 12; ++i) {
    const std::string name = "layer" + std::to_string(i) + ".fc1";
    EXPECT_EQ(foldedCuts[*graph.findOp(name)], foldedCuts[*graph.findOp("layer1.fc1")]) << name;
  }
}

// The ILP over the fold: its plan, priced on the whole graph, is within 2% of the ILP's optimum
// over the whole graph, and the solve names the 9 ops it decided.
TEST(LayerFold, TheIlpOverTheFoldMatchesTheWholeGraphsOptimum) {
  const ir::Graph graph = stackGraph(12);
  const cluster::Cluster cluster = *cluster::clusterPreset("dgx-h100");
  const std::vector<int> ranks{0, 1, 2, 3, 4, 5, 6, 7};
  SearchRequest request;
  request.mode = SearchMode::kIlp;
  auto folded = searchStrategies(graph, ranks, cluster, request);
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  ASSERT_GE(folded->explanation.size(), 2u);
  EXPECT_EQ(folded->explanation[0],
            "stack.layer: 12 layers, those after the first alike: decided as 2");
  EXPECT_TRUE(folded->explanation[1].starts_with("ilp: 9 ops,")) << folded->explanation[1];
  const cost::CostConstants& constants = cost::shippedCostModel()->forDevice(cluster.device.name);
  auto whole = searchIlp(graph, ranks, cluster, *cost::shippedCostModel(), {}, -1, {});
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  auto objective = [&](const std::vector<rules::FactorCuts>& cuts) {
    std::vector<rules::ShardedOp> shards;
    for (const ir::Op& op : graph.ops()) {
      shards.push_back(
          *rules::applyFactorCuts(*rules::shardingRuleFor(graph, op), cuts[op.id], ranks));
    }
    EdgeCostCache edges(cluster, {});
    return *assignmentSeconds(graph, shards, cluster, constants, edges);
  };
  std::vector<rules::FactorCuts> foldedCuts;
  for (const auto& op : folded->sharding.ops) foldedCuts.push_back(op.cuts);
  EXPECT_LE(objective(foldedCuts), objective(whole->cuts) * 1.02);
}

}  // namespace
}  // namespace autopar::search
