#include <gtest/gtest.h>

#include "rules/graph_sharding.h"
#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::f32;
using testing::i64;
using testing::ranks;
using testing::strategyError;

ir::OpAttrs topK() {
  ir::OpAttrs attrs;
  attrs.opaqueType = "TopK";
  attrs.outputTypes = {f32({8, 5}), i64({8, 5})};
  return attrs;
}

/// x [8,1000] -> Opaque "TopK" (k [1]) -> values [8,5], indices [8,5].
struct TopKGraph {
  ir::Graph graph{"topk"};
  ir::OpId op = -1;
};

TopKGraph topKGraph() {
  TopKGraph built;
  const auto x = built.graph.addTensor("x", f32({8, 1000}), ir::TensorRole::kInput).value();
  const auto k = built.graph.addTensor("k", i64({1}), ir::TensorRole::kInput).value();
  built.op =
      built.graph.addOp("topk", OpKind::kOpaque, topK(), {x, k}, {"values", "indices"}).value();
  return built;
}

ShardingRule topKRule() {
  const TopKGraph built = topKGraph();
  auto rule = shardingRuleFor(built.graph, built.graph.op(built.op));
  EXPECT_TRUE(rule.ok()) << (rule.ok() ? "" : rule.error().message);
  return rule.ok() ? *rule : ShardingRule{};
}

TEST(OpaqueRule, NoDimBelongsToAFactor) {
  const ShardingRule rule = topKRule();
  EXPECT_EQ(ruleToString(rule), "([_, _], [_]) -> ([_, _], [_, _])");
  EXPECT_TRUE(rule.factors.empty());
  EXPECT_EQ(strategyError(rule, {{2, 1}, {1}}),
            "inputs[0] dim 0 maps to no factor of the op and cannot be cut (cut 2)");
}

TEST(OpaqueRule, EverySearchKeepsItWhole) {
  const ShardingRule rule = topKRule();
  // The only assignment of cuts is the empty one, whatever the device count: no search can cut it.
  EXPECT_EQ(enumerateFactorCuts(rule, 8), (std::vector<FactorCuts>{{}}));
  EXPECT_EQ(fullDeviceCuts(rule, 8), (std::vector<FactorCuts>{{}}));
  EXPECT_EQ(defaultFactorCuts(rule, 8), (FactorCuts{}));
}

TEST(OpaqueRule, RunsReplicatedOnEveryDevice) {
  const ShardingRule rule = topKRule();
  auto sharded = applyFactorCuts(rule, {}, ranks(8));
  ASSERT_TRUE(sharded.ok()) << sharded.error().message;
  EXPECT_EQ(sharded->matrix.shape(), (std::vector<int64_t>{8}));  // the replica axis alone
  EXPECT_EQ(sharded->replicaAxis, 0);
  EXPECT_EQ(sharded->computeFraction, 1.0);
  ASSERT_EQ(sharded->inputs.size(), 2u);
  ASSERT_EQ(sharded->outputs.size(), 2u);
  for (const auto* layouts : {&sharded->inputs, &sharded->outputs}) {
    for (const layout::TensorLayout& layout : *layouts) {
      EXPECT_EQ(layout.sliceShape(), layout.shape) << layout.toString();
      EXPECT_TRUE(layout.partialAxes.empty()) << layout.toString();
    }
  }
}

// In a data-parallel graph the ops around it are cut on the batch, and it stays whole: its
// input is gathered from the MatMul's batch blocks.
TEST(OpaqueRule, DataParallelGraphKeepsItReplicated) {
  ir::Graph graph("mlp_with_opaque");
  const auto x = graph.addTensor("x", f32({8, 16}), ir::TensorRole::kInput).value();
  const auto w = graph.addTensor("w", f32({16, 16}), ir::TensorRole::kParameter).value();
  const auto dense = graph.addOp("dense", OpKind::kMatMul, {}, {x, w}, {"h"}).value();
  ir::OpAttrs attrs;
  attrs.opaqueType = "LpNormalization";
  attrs.outputTypes = {f32({8, 16})};
  const auto norm =
      graph.addOp("norm", OpKind::kOpaque, attrs, {graph.op(dense).outputs[0]}, {"y"}).value();
  auto sharding = shardGraph(graph, ranks(4));
  ASSERT_TRUE(sharding.ok()) << sharding.error().message;
  const ShardedOp& denseShard = sharding->ops[static_cast<size_t>(dense)];
  const ShardedOp& normShard = sharding->ops[static_cast<size_t>(norm)];
  EXPECT_EQ(denseShard.outputs[0].sliceShape(), (ir::Shape{2, 16}));  // the batch cut in 4
  EXPECT_EQ(normShard.inputs[0].sliceShape(), (ir::Shape{8, 16}));    // whole on every device
  EXPECT_EQ(normShard.outputs[0].sliceShape(), (ir::Shape{8, 16}));
  EXPECT_EQ(sharding->strategies[static_cast<size_t>(norm)], (layout::Strategy{{1, 1}}));
}

}  // namespace
}  // namespace autopar::rules
