#include "search/op_level/recursive.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "layout/strategy.h"

namespace autopar::search {
namespace {

using ir::DType;
using ir::OpKind;
using ir::TensorRole;

/// Seed 002's double-recursive example: 784 -> 512 -> 512 -> 1 with ReLU, batch 32.
ir::Graph seedMlp(int64_t batch = 32) {
  ir::Graph graph("mlp");
  const std::vector<int64_t> widths{784, 512, 512, 1};
  ir::TensorId current = *graph.addTensor("x", {{batch, 784}, DType::kF32}, TensorRole::kInput);
  for (size_t layer = 1; layer < widths.size(); ++layer) {
    const std::string name = "layer" + std::to_string(layer);
    auto weight =
        graph.addTensor(name + ".weight", {{widths[layer - 1], widths[layer]}, DType::kF32},
                        TensorRole::kParameter);
    auto matmul = graph.addOp(name, OpKind::kMatMul, {}, {current, *weight}, {name});
    current = graph.op(*matmul).outputs[0];
    if (layer + 1 < widths.size()) {
      auto relu = graph.addOp("relu" + std::to_string(layer), OpKind::kReLU, {}, {current},
                              {"relu" + std::to_string(layer)});
      current = graph.op(*relu).outputs[0];
    }
  }
  return graph;
}

std::vector<int> ranksOf(int count) {
  std::vector<int> ranks(static_cast<size_t>(count));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

layout::Strategy strategyOf(const ir::Graph& graph, const RecursiveResult& result,
                            const std::string& op) {
  const ir::Op& node = graph.op(*graph.findOp(op));
  return rules::strategyFromFactorCuts(*rules::shardingRuleFor(graph, node), result.cuts[node.id]);
}

TEST(PrimeRounds, FactorDeviceCountsSmallestFirst) {
  EXPECT_EQ(primeRounds(8), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(primeRounds(12), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(primeRounds(6), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(primeRounds(1).empty());
}

TEST(RecursiveProgramming, SeedMlpGetsACompletePlanWithoutAnnotations) {
  const ir::Graph graph = seedMlp();
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  auto result = recursiveProgramming(graph, ranksOf(8), *cluster);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->cuts.size(), graph.ops().size());
  // With batch 32 the weights (784x512, 512x512) outweigh the activations (32x784): at the
  // default mem_coeff 0.1 every round cuts layer1's columns (J), which costs nothing: the input it
  // reads whole is the samples, which have no gradient to all-reduce. layer2 then cuts its rows
  // (K), which take layer1's output as it is sliced, and all-reduces its 32x512 output: Megatron's
  // column- then row-parallel pair.
  EXPECT_EQ(strategyOf(graph, *result, "layer1"), (layout::Strategy{{1, 1}, {1, 8}}));
  EXPECT_EQ(strategyOf(graph, *result, "layer2"), (layout::Strategy{{1, 8}, {8, 1}}));
  for (const ir::Op& op : graph.ops()) {
    auto rule = rules::shardingRuleFor(graph, op);
    EXPECT_TRUE(rules::applyFactorCuts(*rule, result->cuts[op.id], ranksOf(8)).ok()) << op.name;
  }
}

TEST(RecursiveProgramming, LargeBatchAndLowMemCoeffGiveDataParallelism) {
  const ir::Graph graph = seedMlp(4096);
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  RecursiveOptions options;
  options.memCoeff = 0.01;
  auto result = recursiveProgramming(graph, ranksOf(8), *cluster, options);
  ASSERT_TRUE(result.ok()) << result.error().message;
  for (const char* op : {"layer1", "layer2", "layer3"}) {
    EXPECT_EQ(strategyOf(graph, *result, op), (layout::Strategy{{8, 1}, {1, 1}})) << op;
  }
}

TEST(RecursiveProgramming, ExplainPrintsSeedZeroLines) {
  const ir::Graph graph = seedMlp();
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  RecursiveOptions options;
  options.explain = true;
  auto result = recursiveProgramming(graph, ranksOf(8), *cluster, options);
  ASSERT_TRUE(result.ok());
  const auto& lines = result->explanation;
  ASSERT_GE(lines.size(), 7u);
  // 3 rounds x 3 main ops, each a title, one line per feasible choice (4; 3 for layer3, whose
  // single output column cannot be cut), the vector and the decision, as in seed 000's log.
  EXPECT_EQ(lines.size(), 3u * (7u + 7u + 6u));
  EXPECT_EQ(lines[0], "Round 1/3 (cut by 2): layer1");
  EXPECT_EQ(lines[1],
            "If the I-axis is cut, the op-cost is 40140.8, the rest-cost is 0, and the total cost "
            "is 40140.8");  // mem_coeff 0.1 x the 784x512 weight
  // The J cut reads the samples whole, which have no gradient: nothing to all-reduce.
  EXPECT_EQ(lines[2].rfind("If the J-axis is cut, the op-cost is 0,", 0), 0u);
  EXPECT_EQ(lines[3].rfind("If the K-axis is cut, the op-cost is 16384", 0), 0u);  // 32x512 output
  EXPECT_EQ(lines[4].rfind("If do NOT cut the axis, the op-cost is ", 0), 0u);
  EXPECT_EQ(lines[5].rfind("The costs of cutting the I-axis/J-axis/K-axis/no_cut are : "
                           "[const vector]{40140.8, 0, 16384, ",
                           0),
            0u);
  EXPECT_EQ(lines[6], "Choose to cut the J-axis");
}

TEST(RecursiveProgramming, InfeasibleAxesCostTheMaximumDouble) {
  // layer3's output has one column: J cannot be cut, and its cost prints as DBL_MAX.
  const ir::Graph graph = seedMlp();
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  RecursiveOptions options;
  options.explain = true;
  auto result = recursiveProgramming(graph, ranksOf(8), *cluster, options);
  ASSERT_TRUE(result.ok());
  bool found = false;
  for (const auto& line : result->explanation) {
    if (line.find("[const vector]{") != std::string::npos &&
        line.find(", 1.79769e+308, ") != std::string::npos) {
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

/// The search with --explain over the first `devices` of two DGX-A100 nodes.
Expected<RecursiveResult> explainedOnTwoNodes(const ir::Graph& graph, int devices) {
  auto cluster = cluster::clusterPreset("dgx-a100-80g", 2);
  auto taken = cluster::takeDevices(*cluster, devices);
  RecursiveOptions options;
  options.explain = true;
  return recursiveProgramming(graph, ranksOf(devices), *taken, options);
}

TEST(RecursiveProgramming, TwelveDevicesRunAPrimeThreeRound) {
  auto result = explainedOnTwoNodes(seedMlp(48), 12);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->explanation.front(), "Round 1/3 (cut by 2): layer1");
  bool sawThree = false;
  for (const auto& line : result->explanation)
    sawThree = sawThree || line.find("Round 3/3 (cut by 3)") == 0;
  EXPECT_TRUE(sawThree);
}

/// The line of `explanation` that starts with `prefix`, after the title line `title`.
std::string lineAfter(const std::vector<std::string>& explanation, const std::string& title,
                      const std::string& prefix) {
  auto at = std::find(explanation.begin(), explanation.end(), title);
  for (; at != explanation.end(); ++at) {
    if (at->rfind(prefix, 0) == 0) return *at;
  }
  return "";
}

TEST(RecursiveProgramming, HalvingsWithinANodeAddLessToTheAllReduceThanHalvingsAcrossNodes) {
  auto result = explainedOnTwoNodes(seedMlp(), 16);
  ASSERT_TRUE(result.ok()) << result.error().message;
  const auto& lines = result->explanation;
  // layer2 prices a K cut every round: its 32x512 output is all-reduced over 2, 4, 8 devices of a
  // node (2 (g - 1) / g of it: 1, 1.5, 1.75), then over the second node's slow links in full again.
  const std::string kCut = "If the K-axis is cut, the op-cost is ";
  const std::vector<std::pair<std::string, std::string>> opCosts{
      {"Round 1/4 (cut by 2): layer2", "16384,"},
      {"Round 2/4 (cut by 2): layer2", "8192,"},
      {"Round 3/4 (cut by 2): layer2", "4096,"},
      {"Round 4/4 (cut by 2): layer2", "16384,"}};
  for (const auto& [title, cost] : opCosts) {
    EXPECT_EQ(lineAfter(lines, title, kCut).rfind(kCut + cost, 0), 0u) << title;
  }
  // layer1 cut its columns: layer2 takes that output as it is on its rows (K) and pays no
  // rest-cost; taking it whole (J) pays its gather.
  EXPECT_NE(lineAfter(lines, "Round 1/4 (cut by 2): layer2", "If the K-axis is cut")
                .find("the rest-cost is 0,"),
            std::string::npos);
  EXPECT_NE(lineAfter(lines, "Round 1/4 (cut by 2): layer2", "If the J-axis is cut")
                .find("the rest-cost is 8192,"),
            std::string::npos);
  // layer2's K cut already pays for reducing its partial sums: layer3, reading the reduced
  // output, pays no rest-cost for slicing it on its rows.
  EXPECT_NE(lineAfter(lines, "Round 1/4 (cut by 2): layer3", "If the K-axis is cut")
                .find("the rest-cost is 0,"),
            std::string::npos);
}

// nextMemCoeff is where a choice first changes: the search makes the same plan anywhere below
// it; walking the points from 0.1 visits several plans and ends.
TEST(RecursiveProgramming, NextMemCoeffIsWhereThePlanFirstChanges) {
  const ir::Graph graph = seedMlp(512);
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  RecursiveOptions options;
  options.memCoeff = 0.1;
  int plans = 0;
  std::set<std::vector<rules::FactorCuts>> distinct;
  while (plans < 64) {
    auto result = recursiveProgramming(graph, ranksOf(8), *cluster, options);
    ASSERT_TRUE(result.ok());
    ++plans;
    distinct.insert(result->cuts);
    if (!std::isfinite(result->nextMemCoeff)) break;
    const double next = result->nextMemCoeff;
    ASSERT_GE(next, options.memCoeff);
    RecursiveOptions below = options;
    below.memCoeff = options.memCoeff + (next - options.memCoeff) * 0.999;
    auto same = recursiveProgramming(graph, ranksOf(8), *cluster, below);
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(same->cuts, result->cuts) << "mem_coeff " << below.memCoeff;
    options.memCoeff = next * 1.0001;
  }
  // A choice that changes may leave the plan as it was (a later round evens it out).
  EXPECT_GE(distinct.size(), 3U);
  EXPECT_LT(plans, 64) << "the walk ends: a plan past the last point changes no more";
}

TEST(RecursiveProgramming, IsDeterministic) {
  const ir::Graph graph = seedMlp();
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  RecursiveOptions options;
  options.explain = true;
  auto first = recursiveProgramming(graph, ranksOf(8), *cluster, options);
  auto second = recursiveProgramming(graph, ranksOf(8), *cluster, options);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->cuts, second->cuts);
  EXPECT_EQ(first->explanation, second->explanation);
}

}  // namespace
}  // namespace autopar::search
