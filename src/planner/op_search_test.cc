#include "planner/op_search.h"

#include <gtest/gtest.h>

#include <numeric>

#include "frontend/model_presets.h"
#include "planner/configuration/configuration_estimate.h"
#include "rules/graph_sharding.h"
#include "rules/sharding_rule.h"

namespace autopar::planner {
namespace {

frontend::TransformerConfig smallLlama(int64_t layers) {
  frontend::TransformerConfig config;
  config.name = "small";
  config.layers = layers;
  config.hidden = 256;
  config.heads = 8;
  config.kvHeads = 8;
  config.ffn = 688;
  config.vocab = 1024;
  config.seq = 128;
  return config;
}

TEST(OpSearchName, ParsesEveryNameAndNamesTheFlagOnError) {
  for (OpSearch search : {OpSearch::kMegatron, OpSearch::kShardingPropagation,
                          OpSearch::kRecursiveProgramming, OpSearch::kIlp}) {
    auto parsed = parseOpSearch(opSearchName(search));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, search);
  }
  auto unknown = parseOpSearch("alpa");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message,
            "--op-search: expected megatron, sharding_propagation, recursive_programming or ilp, "
            "got alpa");
}

TEST(BlockOpKeys, EveryLayerOfAStackHasTheSamePlaces) {
  auto graph = frontend::buildTransformer(smallLlama(3));
  ASSERT_TRUE(graph);
  const std::vector<std::string> keys = blockOpKeys(*graph);
  ASSERT_EQ(keys.size(), graph->ops().size());
  std::map<std::string, std::vector<std::string>> kindsPerKey;
  for (const ir::Op& op : graph->ops()) {
    kindsPerKey[keys[op.id]].push_back(std::string(ir::opKindName(op.kind)));
  }
  // The embedding and the head keep their names; each layer place holds one op of each layer,
  // all of one kind.
  EXPECT_EQ(kindsPerKey.at("embedding").size(), 1u);
  EXPECT_EQ(kindsPerKey.at("lm_head").size(), 1u);
  const auto& first = kindsPerKey.at("llm.layer.#0");
  EXPECT_EQ(first.size(), 3u);
  for (const auto& [key, kinds] : kindsPerKey) {
    if (!key.starts_with("llm.layer.#")) continue;
    EXPECT_EQ(kinds.size(), 3u) << key;
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), kinds.front()), 3) << key;
  }
}

/// The probe's cuts under Megatron's own annotation (TP 2, one replica), lifted over DP 4, give
/// exactly the strategies Megatron's annotation gives the stage graph (TP 2 x DP 4): lifting
/// changes only the batch factor.
TEST(LiftBlockSharding, MegatronsProbeLiftsToMegatronsStageSharding) {
  frontend::TransformerConfig probe = smallLlama(1);
  probe.parallel = ir::ParallelConfig{.tp = 2, .dp = 1};
  auto probeGraph = frontend::buildTransformer(probe);
  ASSERT_TRUE(probeGraph);
  auto probeCuts = rules::annotatedCuts(*probeGraph);
  ASSERT_TRUE(probeCuts);
  BlockSharding blocks;
  blocks.submeshDevices = 2;
  const std::vector<std::string> probeKeys = blockOpKeys(*probeGraph);
  for (const auto& [opId, cuts] : *probeCuts) blocks.cuts.emplace(probeKeys[opId], cuts);

  frontend::TransformerConfig stage = smallLlama(3);
  stage.microBatch = 4;
  auto unannotated = frontend::buildTransformer(stage);
  ASSERT_TRUE(unannotated);
  auto lifted = liftBlockSharding(blocks, *unannotated, 4);
  ASSERT_TRUE(lifted) << lifted.error().message;

  stage.parallel = ir::ParallelConfig{.tp = 2, .dp = 4};
  auto annotated = frontend::buildTransformer(stage);
  ASSERT_TRUE(annotated);
  auto megatron = rules::annotatedCuts(*annotated);
  ASSERT_TRUE(megatron);
  ASSERT_EQ(megatron->size(), annotated->ops().size());
  for (const auto& [opId, cuts] : *megatron) {
    EXPECT_EQ((*lifted)[static_cast<size_t>(opId)], cuts) << annotated->op(opId).name;
  }
}

TEST(LiftBlockSharding, NamesTheOpWhosePlaceWasNotProbed) {
  auto graph = frontend::buildTransformer(smallLlama(1));
  ASSERT_TRUE(graph);
  BlockSharding empty;
  auto lifted = liftBlockSharding(empty, *graph, 2);
  ASSERT_FALSE(lifted);
  EXPECT_EQ(lifted.error().message,
            "op 'embedding' (embedding): the block probe has no op in its place");
}

TEST(BlockShardingOracle, SearchesEachQueryOnceAndUsesTheWholeSubmesh) {
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  ASSERT_TRUE(cluster);
  BlockShardingOracle oracle(smallLlama(4), *cluster, cost::shippedCostModel());
  const BlockShardingQuery query{OpSearch::kIlp, 2, 1, 2, 0};
  auto first = oracle.shard(query);
  ASSERT_TRUE(first) << first.error().message;
  auto again = oracle.shard(query);
  ASSERT_TRUE(again);
  EXPECT_EQ(first->get(), again->get());
  EXPECT_EQ(oracle.probes(), 1);
  EXPECT_EQ((*first)->submeshDevices, 2);
  // Every matmul of a layer uses both devices of the submesh.
  auto graph = frontend::buildTransformer(smallLlama(1));
  ASSERT_TRUE(graph);
  const std::vector<std::string> keys = blockOpKeys(*graph);
  for (const ir::Op& op : graph->ops()) {
    if (op.kind != ir::OpKind::kMatMul || !ir::isStackLayer(op.block)) continue;
    const rules::FactorCuts& cuts = (*first)->cuts.at(keys[op.id]);
    EXPECT_EQ(std::accumulate(cuts.begin(), cuts.end(), int64_t{1}, std::multiplies<>()), 2)
        << op.name;
  }
  ASSERT_TRUE(oracle.shard({OpSearch::kRecursiveProgramming, 2, 1, 2, 0}));
  EXPECT_EQ(oracle.probes(), 2);
}

/// Megatron's strategies are always a candidate: with any op-level search the configuration's
/// step is the faster of the two evaluations.
TEST(EstimateConfig, OpSearchNeverSlowerThanMegatron) {
  MegatronConfig config;
  config.model = "llama2-7b";
  config.tp = 2;
  config.dp = 4;
  config.gbs = 32;
  for (OpSearch search :
       {OpSearch::kShardingPropagation, OpSearch::kRecursiveProgramming, OpSearch::kIlp}) {
    config.opSearch = search;
    auto estimate = estimateConfig(config);
    ASSERT_TRUE(estimate) << estimate.error().message;
    EXPECT_GT(estimate->opSearchStepSeconds, 0);
    EXPECT_GT(estimate->megatronStepSeconds, 0);
    EXPECT_DOUBLE_EQ(estimate->stepSeconds,
                     std::min(estimate->opSearchStepSeconds, estimate->megatronStepSeconds))
        << opSearchName(search);
    EXPECT_EQ(estimate->opSearchTaken,
              estimate->opSearchStepSeconds < estimate->megatronStepSeconds);
  }
}

}  // namespace
}  // namespace autopar::planner
