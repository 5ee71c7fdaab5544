// Activation memory per transformer layer under recompute, against Korthikanti et al. 2022
// ("Reducing Activation Recomputation in Large Transformer Models", Table 2), on GPT-3 175B with
// tensor parallelism 8: s = 2048, b = 1, h = 12288, fp16 activations, hidden dropout 0.1 and a
// fused attention kernel (so no a*s*s*b softmax term).
//   - selective recompute with sequence parallelism: 34 s b h / t bytes;
//   - full recompute keeps only each layer's input: 2 s b h bytes, or 2 s b h / t when sequence
//     parallelism has already split that input along the sequence (what Megatron-LM stores).
// One layer's figure is the difference between models of 3 and 2 layers. Korthikanti et al. leave
// out the two LayerNorms' statistics (mean and reciprocal deviation, fp32 per token); autopar
// keeps them, 16 s b bytes per layer (split over t under sequence parallelism), and the figures
// below add them explicitly.

#include <gtest/gtest.h>

#include <numeric>

#include "cost/graph_cost.h"
#include "frontend/model_presets.h"
#include "frontend/transformer.h"
#include "rules/graph_sharding.h"

namespace autopar {
namespace {

constexpr int64_t kTp = 8;

int64_t activationBytes(int64_t layers, bool sequenceParallel, cost::LayerRecompute recompute) {
  auto config = frontend::transformerPreset("gpt3-175b");
  EXPECT_TRUE(config.ok());
  config->layers = layers;
  config->microBatch = 1;
  config->parallel = ir::ParallelConfig{.tp = kTp, .dp = 1, .sequenceParallel = sequenceParallel};
  auto graph = frontend::buildTransformer(*config);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  EXPECT_TRUE(cluster.ok());
  std::vector<int> ranks(kTp);
  std::iota(ranks.begin(), ranks.end(), 0);
  auto sharding = rules::shardGraph(*graph, ranks);
  EXPECT_TRUE(sharding.ok()) << sharding.error().message;
  cost::EvaluateOptions options;
  options.recompute.layers = recompute;
  auto report = cost::evaluateGraph(*graph, sharding->ops, *cluster, options);
  EXPECT_TRUE(report.ok()) << report.error().message;
  return report->memory.activationBytes;
}

int64_t perLayer(bool sequenceParallel, cost::LayerRecompute recompute) {
  return activationBytes(3, sequenceParallel, recompute) -
         activationBytes(2, sequenceParallel, recompute);
}

constexpr double kSbh = 2048.0 * 1 * 12288;
constexpr double kNormStatistics = 2 * 2 * 4 * 2048.0;  // two norms, two fp32 values per token

TEST(Recompute, SelectiveWithSequenceParallelKeepsThirtyFourSbhOverT) {
  EXPECT_DOUBLE_EQ(static_cast<double>(perLayer(true, cost::LayerRecompute::kSelective)),
                   34 * kSbh / kTp + kNormStatistics / kTp);
}

TEST(Recompute, FullKeepsOnlyEachLayersInput) {
  EXPECT_DOUBLE_EQ(static_cast<double>(perLayer(false, cost::LayerRecompute::kFull)), 2 * kSbh);
  EXPECT_DOUBLE_EQ(static_cast<double>(perLayer(true, cost::LayerRecompute::kFull)),
                   2 * kSbh / kTp);
}

TEST(Recompute, NoRecomputeKeepsTheFusedAttentionStatisticsOnTop) {
  // Without recompute the fused attention also keeps its softmax statistics: one fp32 value per
  // head and token, a*s*b*4 bytes split over t.
  const double heads = 96;
  EXPECT_DOUBLE_EQ(static_cast<double>(perLayer(true, cost::LayerRecompute::kNone)),
                   34 * kSbh / kTp + kNormStatistics / kTp + heads * 2048 * 4 / kTp);
  // Without sequence parallelism: 10 s b h unsplit (norm inputs, their outputs feeding the
  // column-parallel projections, dropout masks) + 24 s b h / t, Korthikanti's Table 2 row for
  // tensor parallelism without a softmax term.
  EXPECT_DOUBLE_EQ(static_cast<double>(perLayer(false, cost::LayerRecompute::kNone)),
                   10 * kSbh + 24 * kSbh / kTp + kNormStatistics + heads * 2048 * 4 / kTp);
}

TEST(Recompute, ChargesTheExtraForwardInTheBackward) {
  auto stage = [](cost::LayerRecompute recompute) {
    auto config = frontend::transformerPreset("gpt3-175b");
    config->layers = 2;
    config->microBatch = 1;
    config->parallel = ir::ParallelConfig{.tp = kTp, .dp = 1};
    auto graph = frontend::buildTransformer(*config);
    auto cluster = cluster::clusterPreset("dgx-a100-80g");
    std::vector<int> ranks(kTp);
    std::iota(ranks.begin(), ranks.end(), 0);
    auto sharding = rules::shardGraph(*graph, ranks);
    cost::EvaluateOptions options;
    options.recompute.layers = recompute;
    return cost::evaluateGraph(*graph, sharding->ops, *cluster, options)->stages.front();
  };
  const cost::StageCost none = stage(cost::LayerRecompute::kNone);
  const cost::StageCost full = stage(cost::LayerRecompute::kFull);
  EXPECT_EQ(none.recomputeSeconds, 0.0);
  // Full recompute runs the layers' forward again (about a third of a layer's step) and replays
  // the tensor-parallel all-reduces inside them.
  EXPECT_GT(full.recomputeSeconds, 0.25 * full.forwardComputeSeconds);
  EXPECT_LT(full.recomputeSeconds, 1.2 * full.forwardSeconds);
  EXPECT_GT(full.backwardSeconds, none.backwardSeconds);
}

}  // namespace
}  // namespace autopar
