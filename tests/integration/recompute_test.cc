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

#include "frontend/model_presets.h"
#include "frontend/transformer.h"
#include "planner/plan_evaluation.h"

namespace autopar {
namespace {

constexpr int64_t kTp = 8;

/// GPT-3 175B with `layers` layers, TP 8 on one DGX A100, through the planner's pipeline (the
/// semi-auto plan of its Megatron-style annotation) with layer recompute `recompute`.
cost::CostReport evaluate(int64_t layers, bool sequenceParallel, ir::Recompute recompute,
                          bool sliceActivation = false) {
  auto config = frontend::transformerPreset("gpt3-175b");
  EXPECT_TRUE(config.ok());
  config->layers = layers;
  config->microBatch = 1;
  config->parallel = ir::ParallelConfig{.tp = kTp, .dp = 1, .sequenceParallel = sequenceParallel};
  auto graph = frontend::buildTransformer(*config);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  auto cluster = planner::loadCluster("dgx-a100-80g", 1, static_cast<int>(kTp));
  EXPECT_TRUE(cluster.ok());
  planner::PlanOptions options;
  options.setup.recompute = recompute;
  options.training.recomputeSliceActivation = sliceActivation;
  auto evaluated = planner::evaluateModel(
      planner::LoadedModel{
          .graph = std::move(*graph), .source = "gpt3-175b", .microBatch = 1, .sequence = 2048},
      options, *cluster);
  EXPECT_TRUE(evaluated.ok()) << evaluated.error().message;
  return evaluated->report;
}

int64_t activationBytes(int64_t layers, bool sequenceParallel, ir::Recompute recompute) {
  return evaluate(layers, sequenceParallel, recompute).memory.activationBytes;
}

int64_t perLayer(bool sequenceParallel, ir::Recompute recompute) {
  return activationBytes(3, sequenceParallel, recompute) -
         activationBytes(2, sequenceParallel, recompute);
}

constexpr double kSbh = 2048.0 * 1 * 12288;
constexpr double kNormStatistics = 2 * 2 * 4 * 2048.0;  // two norms, two fp32 values per token

TEST(Recompute, SelectiveWithSequenceParallelKeepsThirtyFourSbhOverT) {
  EXPECT_DOUBLE_EQ(static_cast<double>(perLayer(true, ir::Recompute::kSelective)),
                   34 * kSbh / kTp + kNormStatistics / kTp);
}

TEST(Recompute, FullKeepsOnlyEachLayersInput) {
  EXPECT_DOUBLE_EQ(static_cast<double>(perLayer(false, ir::Recompute::kFull)), 2 * kSbh);
  EXPECT_DOUBLE_EQ(static_cast<double>(perLayer(true, ir::Recompute::kFull)), 2 * kSbh / kTp);
}

TEST(Recompute, NoRecomputeKeepsTheFusedAttentionStatisticsOnTop) {
  // Without recompute the fused attention also keeps its softmax statistics: one fp32 value per
  // head and token, a*s*b*4 bytes split over t.
  const double heads = 96;
  EXPECT_DOUBLE_EQ(static_cast<double>(perLayer(true, ir::Recompute::kNone)),
                   34 * kSbh / kTp + kNormStatistics / kTp + heads * 2048 * 4 / kTp);
  // Without sequence parallelism: 10 s b h unsplit (norm inputs, their outputs feeding the
  // column-parallel projections, dropout masks) + 24 s b h / t, Korthikanti's Table 2 row for
  // tensor parallelism without a softmax term.
  EXPECT_DOUBLE_EQ(static_cast<double>(perLayer(false, ir::Recompute::kNone)),
                   10 * kSbh + 24 * kSbh / kTp + kNormStatistics + heads * 2048 * 4 / kTp);
}

TEST(Recompute, SlicedActivationKeepsATthOfEachLayersInputAndGathersItAgain) {
  // MindSpore's recompute_slice_activation: the layer input that tensor parallelism replicates
  // over t devices is kept as 1/t on each (as Megatron-LM's --distribute-saved-activations).
  const auto sliced = [](int64_t layers) {
    return evaluate(layers, false, ir::Recompute::kFull, true);
  };
  EXPECT_DOUBLE_EQ(
      static_cast<double>(sliced(3).memory.activationBytes - sliced(2).memory.activationBytes),
      2 * kSbh / kTp);
  // Each layer's slice is gathered back before the layer runs again: more replay than without.
  const cost::StageCost whole = evaluate(2, false, ir::Recompute::kFull).stages.front();
  const cost::StageCost slices = sliced(2).stages.front();
  EXPECT_GT(slices.recomputeSeconds, whole.recomputeSeconds);
  // With sequence parallelism the input is already split: nothing more to slice.
  EXPECT_EQ(evaluate(2, true, ir::Recompute::kFull, true).memory.activationBytes,
            evaluate(2, true, ir::Recompute::kFull).memory.activationBytes);
}

TEST(Recompute, ChargesTheExtraForwardInTheBackward) {
  auto stage = [](ir::Recompute recompute) { return evaluate(2, false, recompute).stages.front(); };
  const cost::StageCost none = stage(ir::Recompute::kNone);
  const cost::StageCost full = stage(ir::Recompute::kFull);
  EXPECT_EQ(none.recomputeSeconds, 0.0);
  // Full recompute runs the layers' forward again (about a third of a layer's step) and replays
  // the tensor-parallel all-reduces inside them.
  EXPECT_GT(full.recomputeSeconds, 0.25 * full.forwardComputeSeconds);
  EXPECT_LT(full.recomputeSeconds, 1.2 * full.forwardSeconds);
  EXPECT_GT(full.backwardSeconds, none.backwardSeconds);
}

}  // namespace
}  // namespace autopar
