// Seed 001's host placement and non-uniform Gather split, the recompute options of Cell
// recompute, and point-to-point sends between pipeline stages, on small LLaMA-style models.

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <numeric>

#include "cluster/collective.h"
#include "cost/graph_cost.h"
#include "frontend/model_presets.h"
#include "frontend/transformer.h"
#include "rules/graph_sharding.h"
#include "search/op_level/pipeline.h"

namespace autopar {
namespace {

frontend::TransformerConfig smallLlama(int64_t tp) {
  auto config = frontend::transformerPreset("llama2-7b");
  EXPECT_TRUE(config.ok());
  config->layers = 4;
  config->seq = 512;
  config->parallel = ir::ParallelConfig{.tp = tp, .dp = 1};
  config->microBatch = 1;
  return *config;
}

cost::CostReport evaluate(const ir::Graph& graph, int devices,
                          const cost::EvaluateOptions& options = {}, int clusterNodes = 1) {
  auto cluster = cluster::clusterPreset("dgx-a100-80g", clusterNodes);
  EXPECT_TRUE(cluster.ok());
  std::vector<int> ranks(static_cast<size_t>(devices));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto sharding = rules::shardGraph(graph, ranks);
  EXPECT_TRUE(sharding.ok()) << sharding.error().message;
  auto report = cost::evaluateGraph(graph, sharding->ops, *cluster, options);
  EXPECT_TRUE(report.ok()) << report.error().message;
  return std::move(*report);
}

TEST(HostPlacement, TheEmbeddingTableMovesToHostMemoryAndItsActivationsCrossPcie) {
  auto graph = frontend::buildTransformer(smallLlama(2));
  ASSERT_TRUE(graph.ok());
  const cost::CostReport device = evaluate(*graph, 2);
  graph->mutableOp(*graph->findOp("embedding")).placement = ir::Placement::kHost;
  const cost::CostReport host = evaluate(*graph, 2);
  // The table [32000, 4096] bf16 split over tp 2: 18 bytes of states per element.
  const int64_t tableStates = int64_t{32000} * 4096 / 2 * 18;
  EXPECT_EQ(host.memory.hostBytes, tableStates);
  EXPECT_EQ(device.memory.total() - host.memory.total(), tableStates);
  EXPECT_EQ(device.stages[0].hostTransferSeconds, 0.0);
  // Token ids in and the [1, 512, 4096] bf16 output out, and back in backward, at 25 GB/s.
  const double bytes = 512 * 4.0 + 512 * 4096 * 2.0;
  EXPECT_NEAR(host.stages[0].hostTransferSeconds, 2 * bytes / 25e9, 1e-12);
}

TEST(ManualSplit, TheLargestPartSetsTheTableSlice) {
  auto graph = frontend::buildTransformer(smallLlama(2));
  ASSERT_TRUE(graph.ok());
  const cost::CostReport even = evaluate(*graph, 2);
  graph->mutableOp(*graph->findOp("embedding")).attrs.manualSplit = {24000, 8000};
  const cost::CostReport uneven = evaluate(*graph, 2);
  // Parameter bytes per device: the table's slice grows from 16000 to 24000 rows (2 bytes each).
  EXPECT_EQ(uneven.memory.parameterBytes - even.memory.parameterBytes, int64_t{8000} * 4096 * 2);
  graph->mutableOp(*graph->findOp("embedding")).attrs.manualSplit = {10000, 12000, 10000};
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  auto sharding = rules::shardGraph(*graph, {0, 1});
  auto report = cost::evaluateGraph(*graph, sharding->ops, *cluster);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().message,
            "op 'embedding': attrs.manual_split has 3 parts but its strategy cuts dim 0 of input 0 "
            "into 2");
}

/// smallLlama(4) with sequence parallelism, the layers listed recomputed.
ir::Graph sequenceParallelLlama(std::initializer_list<int> recomputedLayers) {
  auto config = smallLlama(4);
  config.parallel->sequenceParallel = true;
  auto graph = frontend::buildTransformer(config);
  EXPECT_TRUE(graph.ok());
  ir::BlockSettings recompute;
  recompute.recompute = true;
  for (int layer : recomputedLayers) {
    EXPECT_TRUE(graph->setBlockSettings(fmt::format("llm.layer.{}", layer), recompute).ok());
  }
  return std::move(*graph);
}

TEST(RecomputeOptions, MpCommRecomputeTradesTheGatheredInputForAReplayedGather) {
  const ir::Graph graph = sequenceParallelLlama({1});
  cost::EvaluateOptions options;
  const cost::CostReport replay = evaluate(graph, 4, options);
  options.recompute.mpCommRecompute = false;
  const cost::CostReport keep = evaluate(graph, 4, options);
  // Keeping the all-gathered layer input costs memory (tp times the slice) and saves time.
  EXPECT_GT(keep.memory.activationBytes, replay.memory.activationBytes);
  EXPECT_LT(keep.stages[0].recomputeSeconds, replay.stages[0].recomputeSeconds);
}

// Recomputing a layer trades the gathers its kept sequence-parallel norm outputs need in backward
// for a replay of its forward redistributions, each once per tensor and layout: q, k and v read
// one all-gather of the norm's output, in the forward and in the replay.
TEST(RecomputeOptions, TheReplayResendsEachForwardRedistributionOnce) {
  auto config = smallLlama(4);
  config.parallel->sequenceParallel = true;
  auto stageOf = [&](int64_t layers, bool recomputeLayer1) {
    config.layers = layers;
    auto graph = frontend::buildTransformer(config);
    EXPECT_TRUE(graph.ok());
    ir::BlockSettings recompute;
    recompute.recompute = true;
    if (recomputeLayer1) {
      EXPECT_TRUE(graph->setBlockSettings("llm.layer.1", recompute).ok());
    }
    return evaluate(*graph, 4).stages[0];
  };
  auto replayed = [](const cost::StageCost& stage) {
    return stage.recomputeSeconds - stage.recomputeComputeSeconds;
  };
  const cost::StageCost four = stageOf(4, false);
  const cost::StageCost three = stageOf(3, false);
  const double forwardPerLayer = four.forwardCommSeconds - three.forwardCommSeconds;
  const double stashPerLayer = replayed(four) - replayed(three);
  ASSERT_GT(forwardPerLayer, 0.0);
  ASSERT_GT(stashPerLayer, 0.0);
  EXPECT_NEAR(replayed(stageOf(4, true)) - replayed(four) + stashPerLayer, forwardPerLayer,
              1e-9 * forwardPerLayer);
}

// Where a code path overlaps activation communication (TE's overlapped layers, MindSpore's
// interleaved copies), the replay's redistributions run in the backward pass like its own and
// hide under its compute: only the recomputed forward's compute stays in recomputeSeconds.
TEST(RecomputeOptions, OverlappedCommunicationHidesTheReplayUnderTheBackward) {
  const ir::Graph graph = sequenceParallelLlama({0, 1, 2, 3});
  cost::EvaluateOptions options;
  const cost::StageCost exposed = evaluate(graph, 4, options).stages[0];
  const double replay = exposed.recomputeSeconds - exposed.recomputeComputeSeconds;
  ASSERT_GT(replay, 0.0);
  options.codePath.tpCommOverlap = true;
  const cost::StageCost hidden = evaluate(graph, 4, options).stages[0];
  EXPECT_DOUBLE_EQ(hidden.recomputeSeconds, hidden.recomputeComputeSeconds);
  // The backward's compute (with the recomputed forward's) outlasts its communication and the
  // replay together, so nothing of either is left.
  ASSERT_GT(exposed.backwardComputeSeconds + exposed.recomputeComputeSeconds,
            exposed.backwardCommSeconds + replay);
  EXPECT_EQ(hidden.backwardCommSeconds, 0.0);
  EXPECT_LT(hidden.backwardSeconds + hidden.forwardSeconds,
            exposed.backwardSeconds + exposed.forwardSeconds - replay);
}

TEST(RecomputeOptions, OpRecomputeDropsTheOutputAndKeepsTheInputs) {
  auto graph = frontend::buildTransformer(smallLlama(1));
  ASSERT_TRUE(graph.ok());
  const cost::CostReport plain = evaluate(*graph, 1);
  // SiLU's output feeds the gating Mul, which keeps it; recomputing SiLU drops it ([1,512,11008]
  // bf16) while SiLU's own input is kept anyway.
  graph->mutableOp(*graph->findOp("layer0.mlp.act")).recompute = true;
  const cost::CostReport recomputed = evaluate(*graph, 1);
  EXPECT_EQ(plain.memory.activationBytes - recomputed.memory.activationBytes,
            int64_t{512} * 11008 * 2);
  EXPECT_GT(recomputed.stages[0].recomputeSeconds, 0.0);
}

/// `graph` split into two pipeline stages, the second's devices `rankStride` ranks after the
/// first's.
cost::EvaluateOptions twoStages(const ir::Graph& graph, int rankStride) {
  auto stages = search::assignStages(graph, 2, 1);
  EXPECT_TRUE(stages.ok());
  cost::EvaluateOptions options;
  if (stages.ok()) options.stageOfOp = stages->virtualStageOf;
  options.stages = 2;
  options.physicalStages = 2;
  options.rankStride = rankStride;
  return options;
}

TEST(PipelineSends, StagesOnDifferentNodesSendOverTheSlowerLink) {
  auto graph = frontend::buildTransformer(smallLlama(1));
  ASSERT_TRUE(graph.ok());
  // Stages on ranks 0 and 1: one node, NVLink.
  cost::EvaluateOptions options = twoStages(*graph, 1);
  const cost::CostReport nvlink = evaluate(*graph, 1, options, 2);
  options.rankStride = 8;  // stages on ranks 0 and 8: two nodes, InfiniBand
  const cost::CostReport infiniband = evaluate(*graph, 1, options, 2);
  // The hidden state [1, 512, 4096] bf16 crosses once.
  EXPECT_EQ(nvlink.stages[0].sendBytes, int64_t{512} * 4096 * 2);
  EXPECT_EQ(nvlink.stages[1].sendBytes, 0);
  EXPECT_GT(infiniband.stages[0].sendSeconds, 5 * nvlink.stages[0].sendSeconds);
}

TEST(PipelineSends, ATensorParallelReplicatedActivationIsScatteredAndGathered) {
  auto graph = frontend::buildTransformer(smallLlama(8));
  ASSERT_TRUE(graph.ok());
  // Stage 0 on node 0's 8 GPUs, stage 1 on node 1's.
  const cost::CostReport report = evaluate(*graph, 8, twoStages(*graph, 8), 2);
  // The hidden state [1, 512, 4096] bf16, which the 8 tensor-parallel ranks hold alike, crosses
  // as 8 pieces, one per rank and network link, and is all-gathered over NVLink on arrival.
  const int64_t whole = int64_t{512} * 4096 * 2;
  EXPECT_EQ(report.stages[0].sendBytes, whole / 8);
  auto cluster = cluster::clusterPreset("dgx-a100-80g", 2);
  ASSERT_TRUE(cluster.ok());
  const std::vector<int> link = {0, 8};
  const std::vector<int> node = {0, 1, 2, 3, 4, 5, 6, 7};
  const double expected =
      cluster::collectiveCost(*cluster, cluster::Collective::kSendRecv, link, whole / 8).seconds +
      cluster::collectiveCost(*cluster, cluster::Collective::kAllGather, node, whole).seconds;
  EXPECT_NEAR(report.stages[0].sendSeconds, expected, 1e-12);
  const double unscattered =
      cluster::collectiveCost(*cluster, cluster::Collective::kSendRecv, link, whole).seconds;
  EXPECT_LT(report.stages[0].sendSeconds, unscattered / 2);
}

}  // namespace
}  // namespace autopar
