#include "search/op_level/layer_fold.h"

#include <gtest/gtest.h>

#include <functional>

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

/// The op-level objective (objective.h) of one cut per op of `graph`.
double objective(const ir::Graph& graph, const cluster::Cluster& cluster,
                 const std::vector<int>& ranks, const std::vector<rules::FactorCuts>& cuts) {
  std::vector<rules::ShardedOp> shards;
  for (const ir::Op& op : graph.ops()) {
    shards.push_back(
        *rules::applyFactorCuts(*rules::shardingRuleFor(graph, op), cuts[op.id], ranks));
  }
  EdgeCostCache edges(cluster, {});
  return *assignmentSeconds(graph, shards, cluster,
                            cost::shippedCostModel()->forDevice(cluster.device.name), edges);
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

/// The 12-layer stack on one 8-device node, searched by `mode` over the fold; the whole-graph
/// search's cuts come from `whole`. Checks that the fold was searched, that the folded plan,
/// priced on the whole graph, is within 2% of the whole-graph plan's objective, and that every
/// layer after the first took layer 1's decision.
void expectFoldedPlanMatchesWholeGraph(
    SearchMode mode,
    const std::function<std::vector<rules::FactorCuts>(const ir::Graph&, const cluster::Cluster&,
                                                       const std::vector<int>&)>& whole,
    const std::string& solveLine) {
  const ir::Graph graph = stackGraph(12);
  const cluster::Cluster cluster = *cluster::clusterPreset("dgx-h100");
  const std::vector<int> ranks{0, 1, 2, 3, 4, 5, 6, 7};
  SearchRequest request;
  request.mode = mode;
  auto folded = searchStrategies(graph, ranks, cluster, request);
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  ASSERT_GE(folded->explanation.size(), 2u);
  EXPECT_EQ(folded->explanation[0],
            "stack.layer: 12 layers, those after the first alike: decided as 2");
  EXPECT_TRUE(folded->explanation[1].starts_with(solveLine)) << folded->explanation[1];
  std::vector<rules::FactorCuts> foldedCuts;
  for (const auto& op : folded->sharding.ops) foldedCuts.push_back(op.cuts);
  EXPECT_LE(objective(graph, cluster, ranks, foldedCuts),
            objective(graph, cluster, ranks, whole(graph, cluster, ranks)) * 1.02);
  for (int i = 2; i < 12; ++i) {
    const std::string name = "layer" + std::to_string(i) + ".fc1";
    EXPECT_EQ(foldedCuts[*graph.findOp(name)], foldedCuts[*graph.findOp("layer1.fc1")]) << name;
  }
}

TEST(LayerFold, ShardingPropagationOverTheFoldMatchesTheWholeGraphsPlan) {
  expectFoldedPlanMatchesWholeGraph(
      SearchMode::kShardingPropagation,
      [](const ir::Graph& graph, const cluster::Cluster& cluster, const std::vector<int>& ranks) {
        return propagateStrategies(graph, ranks, cluster, {})->cuts;
      },
      "no annotated op: anchored at ");
}

// The ILP over the fold decides 9 ops (the first two layers and the head).
TEST(LayerFold, TheIlpOverTheFoldMatchesTheWholeGraphsOptimum) {
  expectFoldedPlanMatchesWholeGraph(
      SearchMode::kIlp,
      [](const ir::Graph& graph, const cluster::Cluster& cluster, const std::vector<int>& ranks) {
        return searchIlp(graph, ranks, cluster, *cost::shippedCostModel(), {}, -1, {})->cuts;
      },
      "ilp: 9 ops,");
}

}  // namespace
}  // namespace autopar::search
