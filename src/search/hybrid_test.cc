#include "search/hybrid.h"

#include <gtest/gtest.h>

namespace autopar::search {
namespace {

HybridModel smallModel() {
  HybridModel model;
  model.layers = 8;
  model.heads = 8;
  model.kvHeads = 2;
  model.ffn = 1024;
  model.vocab = 1000;
  model.seq = 512;
  return model;
}

HybridSpace smallSpace() {
  HybridSpace space;
  space.world = 8;
  space.devicesPerNode = 8;
  space.globalBatch = 16;
  space.microBatchSizes = {1, 2};
  return space;
}

TEST(HybridSearch, ShapesRespectTheModelAndTheBatch) {
  const auto shapes = hybridShapes(smallModel(), smallSpace());
  ASSERT_FALSE(shapes.empty());
  for (const auto& shape : shapes) {
    EXPECT_EQ(shape.tp * shape.pp * shape.dp, 8);
    EXPECT_LE(shape.tp, 2) << "kvHeads 2 limits TP";
    EXPECT_EQ(16 % (shape.dp * shape.mbs), 0);
    const int64_t microBatches = 16 / (shape.dp * shape.mbs);
    EXPECT_GE(microBatches, shape.pp);
    if (shape.vpp > 1) {
      EXPECT_EQ(microBatches % shape.pp, 0);
    }
    EXPECT_LE(shape.pp * shape.vpp, 8);
    EXPECT_EQ(shape.sequenceParallel, shape.tp > 1);
  }
  // TP 1 and 2; PP 1, 2, 4, 8 under each; VPP 2 only with PP > 1 and enough layers.
  bool interleaved = false;
  for (const auto& shape : shapes) interleaved |= shape.vpp == 2;
  EXPECT_TRUE(interleaved);
}

TEST(HybridSearch, LadderStopsAtTheFirstFitAndRanksFastestFirst) {
  // A toy evaluator: memory falls with each saver and with PP x TP, time rises with each saver.
  int calls = 0;
  auto evaluate = [&](const HybridCandidate& c) -> Expected<HybridScore> {
    ++calls;
    const int saver = (c.recompute == "selective" ? 2 : c.recompute == "full" ? 3 : 0) + c.zero;
    HybridScore score;
    score.peakBytes = 100 / (c.tp * c.pp) + 40 - 8 * saver;
    score.stepSeconds =
        1.0 + 0.1 * saver + 0.01 * static_cast<double>(c.pp) + 0.001 * static_cast<double>(c.mbs);
    score.fits = score.peakBytes <= 40;
    return score;
  };
  auto result = searchHybrid(smallModel(), smallSpace(), evaluate);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_FALSE(result->ranked.empty());
  EXPECT_EQ(result->evaluations, calls);
  for (size_t i = 1; i < result->ranked.size(); ++i) {
    EXPECT_LE(result->ranked[i - 1].second.stepSeconds, result->ranked[i].second.stepSeconds);
  }
  for (const auto& [candidate, score] : result->ranked) EXPECT_TRUE(score.fits);
  // PP 1, TP 1 needs 140 bytes: no rung brings it under 40, so it is not ranked.
  for (const auto& [candidate, score] : result->ranked) {
    EXPECT_FALSE(candidate.tp == 1 && candidate.pp == 1);
  }
  // Each ranked candidate is its shape's first rung that fits: below it nothing fits.
  for (const auto& [candidate, score] : result->ranked) {
    if (candidate.recompute == "none" && candidate.zero == 0) continue;
    HybridCandidate bare = candidate;
    bare.recompute = "none";
    bare.zero = 0;
    EXPECT_FALSE(evaluate(bare)->fits);
  }
  // Same inputs, same ranking.
  auto again = searchHybrid(smallModel(), smallSpace(), evaluate);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->ranked.size(), result->ranked.size());
  for (size_t i = 0; i < result->ranked.size(); ++i) {
    EXPECT_EQ(again->ranked[i].first.pp, result->ranked[i].first.pp);
    EXPECT_EQ(again->ranked[i].first.tp, result->ranked[i].first.tp);
    EXPECT_EQ(again->ranked[i].first.mbs, result->ranked[i].first.mbs);
    EXPECT_EQ(again->ranked[i].first.recompute, result->ranked[i].first.recompute);
  }
}

TEST(HybridSearch, NothingFitsReportsTheLeanestAndAnEmptySpaceFails) {
  auto never = [](const HybridCandidate& c) -> Expected<HybridScore> {
    return HybridScore{1.0, 1000 - 10 * c.tp * c.pp, false};
  };
  auto result = searchHybrid(smallModel(), smallSpace(), never);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->ranked.empty());
  EXPECT_EQ(result->leanest.first.tp * result->leanest.first.pp, 8);
  HybridSpace odd = smallSpace();
  odd.globalBatch = 3;
  odd.microBatchSizes = {2};
  auto empty = searchHybrid(smallModel(), odd, never);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("no parallel shape fits 8 devices"), std::string::npos);
}

}  // namespace
}  // namespace autopar::search
