#include "search/op_level/propagation.h"

#include <gtest/gtest.h>

#include <numeric>

#include "cost/graph_cost.h"
#include "layout/strategy.h"
#include "rules/graph_sharding.h"
#include "search/op_level/objective.h"

namespace autopar::search {
namespace {

using ir::DType;
using ir::OpKind;
using ir::TensorRole;

/// Seed 002's FFN: 784 -> 512 -> 256 -> 128 -> 64 -> 10, MatMul + bias Add, ReLU between.
ir::Graph seedFfn() {
  ir::Graph graph("ffn");
  const std::vector<int64_t> widths{784, 512, 256, 128, 64, 10};
  ir::TensorId current = *graph.addTensor("x", {{32, 784}, DType::kF32}, TensorRole::kInput);
  for (size_t layer = 1; layer < widths.size(); ++layer) {
    const std::string name = "dense" + std::to_string(layer);
    auto weight =
        graph.addTensor(name + ".weight", {{widths[layer - 1], widths[layer]}, DType::kF32},
                        TensorRole::kParameter);
    auto bias =
        graph.addTensor(name + ".bias", {{widths[layer]}, DType::kF32}, TensorRole::kParameter);
    auto matmul =
        graph.addOp(name + ".matmul", OpKind::kMatMul, {}, {current, *weight}, {name + ".matmul"});
    auto add = graph.addOp(name + ".bias_add", OpKind::kAdd, {},
                           {graph.op(*matmul).outputs[0], *bias}, {name + ".bias_add"});
    current = graph.op(*add).outputs[0];
    if (layer + 1 < widths.size()) {
      auto relu = graph.addOp("relu" + std::to_string(layer), OpKind::kReLU, {}, {current},
                              {"relu" + std::to_string(layer)});
      current = graph.op(*relu).outputs[0];
    }
  }
  return graph;
}

struct Fixture {
  ir::Graph graph = seedFfn();
  cluster::Cluster cluster = *cluster::clusterPreset("dgx-a100-80g");
  std::vector<int> ranks = std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7};

  rules::FactorCuts cutsOf(const std::string& op, const layout::Strategy& strategy) const {
    const ir::Op& node = graph.op(*graph.findOp(op));
    auto rule = rules::shardingRuleFor(graph, node);
    return *rules::factorCutsFromStrategy(*rule, strategy);
  }
  std::map<ir::OpId, rules::FactorCuts> seedAnnotations() const {
    return {{*graph.findOp("dense1.matmul"), cutsOf("dense1.matmul", {{2, 4}, {4, 1}})},
            {*graph.findOp("dense3.matmul"), cutsOf("dense3.matmul", {{1, 8}, {8, 1}})}};
  }
  layout::Strategy strategyOf(const PropagationResult& result, const std::string& op) const {
    const ir::Op& node = graph.op(*graph.findOp(op));
    auto rule = rules::shardingRuleFor(graph, node);
    return rules::strategyFromFactorCuts(*rule, result.cuts[node.id]);
  }
  double stepSeconds(const std::vector<rules::FactorCuts>& cuts) const {
    const std::vector<rules::StrategySource> sources(cuts.size(), rules::StrategySource::kSearch);
    auto sharding = rules::shardGraphWithCuts(graph, ranks, cuts, sources);
    auto report = cost::evaluateGraph(graph, sharding->ops, cluster);
    return report->time.totalSeconds();
  }
};

TEST(ShardingPropagation, SeedFfnDecidesEveryOpFromTwoAnnotations) {
  Fixture f;
  auto result = propagateStrategies(f.graph, f.ranks, f.cluster, f.seedAnnotations());
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->cuts.size(), f.graph.ops().size());
  EXPECT_EQ(result->log.size(), f.graph.ops().size() - 2);  // one line per decided op
  // The annotations are kept.
  EXPECT_EQ(f.strategyOf(*result, "dense1.matmul"), (layout::Strategy{{2, 4}, {4, 1}}));
  EXPECT_EQ(f.strategyOf(*result, "dense3.matmul"), (layout::Strategy{{1, 8}, {8, 1}}));
  // dense1's output is rows / 2 and partial over 4: the bias add takes it reduce-scattered on
  // columns, and relu1 and dense2 then keep that layout with no redistribution.
  EXPECT_EQ(f.strategyOf(*result, "dense1.bias_add"), (layout::Strategy{{4, 2}, {2}}));
  EXPECT_EQ(f.strategyOf(*result, "relu1"), (layout::Strategy{{4, 2}}));
  EXPECT_EQ(f.strategyOf(*result, "dense2.matmul"), (layout::Strategy{{4, 2}, {2, 1}}));
  // relu2 feeds dense3, which wants its input split on columns by 8: relu2 produces that.
  EXPECT_EQ(f.strategyOf(*result, "relu2"), (layout::Strategy{{1, 8}}));
  // Every strategy applies and uses all 8 devices.
  for (const ir::Op& op : f.graph.ops()) {
    int64_t product = 1;
    for (int64_t cut : result->cuts[op.id]) product *= cut;
    EXPECT_EQ(product, 8) << op.name;
  }
}

TEST(ShardingPropagation, NoWorseThanDataParallelForTheUnannotatedOps) {
  Fixture f;
  auto result = propagateStrategies(f.graph, f.ranks, f.cluster, f.seedAnnotations());
  ASSERT_TRUE(result.ok());
  std::map<std::string, layout::Strategy> annotations{{"dense1.matmul", {{2, 4}, {4, 1}}},
                                                      {"dense3.matmul", {{1, 8}, {8, 1}}}};
  auto semiAuto = rules::shardGraph(f.graph, f.ranks, annotations);
  ASSERT_TRUE(semiAuto.ok());
  auto semiAutoReport = cost::evaluateGraph(f.graph, semiAuto->ops, f.cluster);
  ASSERT_TRUE(semiAutoReport.ok());
  EXPECT_LT(f.stepSeconds(result->cuts), semiAutoReport->time.totalSeconds());
}

// With no annotation the heaviest op anchors the spread (propagation.h): the plan's objective
// is below every op data parallel's, and the same inputs give the same plan.
TEST(ShardingPropagation, WithoutAnnotationsTheHeaviestOpAnchorsAPlanBetterThanDataParallel) {
  Fixture f;
  auto result = propagateStrategies(f.graph, f.ranks, f.cluster, {});
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_FALSE(result->log.empty());
  EXPECT_TRUE(result->log.front().starts_with("no annotated op: anchored at 'dense1.matmul' "))
      << result->log.front();
  auto objective = [&](const std::vector<rules::FactorCuts>& cuts) {
    std::vector<rules::ShardedOp> shards;
    for (const ir::Op& op : f.graph.ops()) {
      shards.push_back(
          *rules::applyFactorCuts(*rules::shardingRuleFor(f.graph, op), cuts[op.id], f.ranks));
    }
    EdgeCostCache edges(f.cluster, {});
    return *assignmentSeconds(f.graph, shards, f.cluster,
                              cost::shippedCostModel()->forDevice(f.cluster.device.name), edges);
  };
  std::vector<rules::FactorCuts> dataParallel;
  for (const ir::Op& op : f.graph.ops()) {
    dataParallel.push_back(rules::defaultFactorCuts(*rules::shardingRuleFor(f.graph, op), 8));
  }
  EXPECT_NE(result->cuts, dataParallel);
  EXPECT_LT(objective(result->cuts), objective(dataParallel));
  auto again = propagateStrategies(f.graph, f.ranks, f.cluster, {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cuts, result->cuts);
  EXPECT_EQ(again->log, result->log);
}

TEST(ShardingPropagation, IsDeterministic) {
  Fixture f;
  auto first = propagateStrategies(f.graph, f.ranks, f.cluster, f.seedAnnotations());
  auto second = propagateStrategies(f.graph, f.ranks, f.cluster, f.seedAnnotations());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->cuts, second->cuts);
  EXPECT_EQ(first->log, second->log);
}

TEST(ShardingPropagation, ReportsConflictsBetweenAnnotatedNeighbours) {
  Fixture f;
  auto fixed = f.seedAnnotations();
  fixed[*f.graph.findOp("dense1.bias_add")] = f.cutsOf("dense1.bias_add", {{8, 1}, {1}});
  auto result = propagateStrategies(f.graph, f.ranks, f.cluster, fixed);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->conflicts.size(), 1u);
  EXPECT_EQ(result->conflicts[0].description.rfind(
                "tensor 'dense1.matmul' between 'dense1.matmul' ((2,4),(4,1)) and "
                "'dense1.bias_add' ((8,1),(1,)): inserted reduce_scatter",
                0),
            0u)
      << result->conflicts[0].description;
}

TEST(ShardingPropagation, SharedParameterWithTwoLayoutsIsAnError) {
  ir::Graph graph("shared");
  auto x = graph.addTensor("x", {{8, 16}, DType::kF32}, TensorRole::kInput);
  auto w = graph.addTensor("w", {{16, 16}, DType::kF32}, TensorRole::kParameter);
  auto a = graph.addOp("a", OpKind::kMatMul, {}, {*x, *w}, {"ya"});
  auto b = graph.addOp("b", OpKind::kMatMul, {}, {graph.op(*a).outputs[0], *w}, {"yb"});
  auto rule = rules::shardingRuleFor(graph, graph.op(*a));
  std::map<ir::OpId, rules::FactorCuts> fixed{
      {*a, *rules::factorCutsFromStrategy(*rule, {{1, 4}, {4, 1}})},
      {*b, *rules::factorCutsFromStrategy(*rule, {{1, 1}, {1, 4}})}};
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  auto result = propagateStrategies(graph, {0, 1, 2, 3}, *cluster, fixed);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message.rfind(
                "parameter 'w' is shared by 'a' ((1,4),(4,1)) and 'b' ((1,1),(1,4)), whose "
                "annotations store it in different layouts",
                0),
            0u)
      << result.error().message;
}

TEST(ShardingPropagation, SharedParameterConflictsCanBeLeftToRedistribution) {
  // The recursive search turns the shared-parameter error off: its main ops may disagree.
  ir::Graph graph("shared");
  auto x = graph.addTensor("x", {{8, 16}, DType::kF32}, TensorRole::kInput);
  auto w = graph.addTensor("w", {{16, 16}, DType::kF32}, TensorRole::kParameter);
  auto a = graph.addOp("a", OpKind::kMatMul, {}, {*x, *w}, {"ya"});
  auto b = graph.addOp("b", OpKind::kMatMul, {}, {graph.op(*a).outputs[0], *w}, {"yb"});
  auto rule = rules::shardingRuleFor(graph, graph.op(*a));
  std::map<ir::OpId, rules::FactorCuts> fixed{
      {*a, *rules::factorCutsFromStrategy(*rule, {{1, 4}, {4, 1}})},
      {*b, *rules::factorCutsFromStrategy(*rule, {{1, 1}, {1, 4}})}};
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  PropagationOptions options;
  options.sharedParameterConflictIsError = false;
  auto result = propagateStrategies(graph, {0, 1, 2, 3}, *cluster, fixed, options);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->cuts[*a], fixed[*a]);
  EXPECT_EQ(result->cuts[*b], fixed[*b]);
}

TEST(ShardingPropagation, CrossesRankChangingOps) {
  ir::Graph graph("reshape");
  auto x = graph.addTensor("x", {{8, 16, 32}, DType::kF32}, TensorRole::kInput);
  auto w = graph.addTensor("w", {{32, 64}, DType::kF32}, TensorRole::kParameter);
  auto mm = graph.addOp("mm", OpKind::kMatMul, {}, {*x, *w}, {"y"});
  ir::OpAttrs reshape;
  reshape.newShape = {128, 64};
  auto flat = graph.addOp("flat", OpKind::kReshape, reshape, {graph.op(*mm).outputs[0]}, {"f"});
  ir::OpAttrs transpose;
  transpose.perm = {1, 0};
  auto t = graph.addOp("t", OpKind::kTranspose, transpose, {graph.op(*flat).outputs[0]}, {"ft"});
  ir::OpAttrs reduce;
  reduce.axes = {1};
  ASSERT_TRUE(graph.addOp("sum", OpKind::kReduceSum, reduce, {graph.op(*t).outputs[0]}, {"s"}));
  auto rule = rules::shardingRuleFor(graph, graph.op(*mm));
  std::map<ir::OpId, rules::FactorCuts> fixed{
      {*mm, *rules::factorCutsFromStrategy(*rule, {{8, 1, 1}, {1, 1}})}};
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  auto result = propagateStrategies(graph, {0, 1, 2, 3, 4, 5, 6, 7}, *cluster, fixed);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->cuts.size(), 4u);
  // The batch split flows through the reshape ([8*16] keeps 8 whole as its major factor).
  auto reshapeRule = rules::shardingRuleFor(graph, graph.op(*flat));
  EXPECT_EQ(rules::strategyFromFactorCuts(*reshapeRule, result->cuts[*flat]),
            (layout::Strategy{{8, 1, 1}}));
}

}  // namespace
}  // namespace autopar::search
