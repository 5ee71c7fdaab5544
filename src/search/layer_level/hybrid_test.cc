#include "search/layer_level/hybrid.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

namespace autopar::search {
namespace {

HybridModel smallModel() {
  HybridModel model;
  model.layers = 8;
  model.tensorParallelExtents = {{"heads", 8}, {"kvHeads", 2}, {"ffn", 1024}, {"vocab", 1000}};
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
    if (shape.sequenceParallel) {
      EXPECT_GT(shape.tp, 1);
    }
  }
  // Sequence parallel is tried both ways wherever TP > 1.
  int parallel = 0;
  int tensorParallel = 0;
  for (const auto& shape : shapes) {
    parallel += shape.sequenceParallel ? 1 : 0;
    tensorParallel += shape.tp > 1 ? 1 : 0;
  }
  EXPECT_GT(parallel, 0);
  EXPECT_EQ(2 * parallel, tensorParallel);
  // TP 1 and 2; PP 1, 2, 4, 8 under each; VPP 2 only with PP > 1 and enough layers.
  bool interleaved = false;
  for (const auto& shape : shapes) interleaved |= shape.vpp == 2;
  EXPECT_TRUE(interleaved);
}

TEST(HybridSearch, ContextParallelOnlyForLongSequences) {
  HybridModel model = smallModel();
  HybridSpace space = smallSpace();
  for (const auto& shape : hybridShapes(model, space)) EXPECT_EQ(shape.cp, 1) << "512 tokens";
  model.seq = 16384;
  space.minTokensPerContextRank = 4096;
  std::set<int64_t> degrees;
  for (const auto& shape : hybridShapes(model, space)) {
    degrees.insert(shape.cp);
    EXPECT_EQ(shape.tp * shape.cp * shape.pp * shape.dp, 8);
    EXPECT_GE(model.seq / shape.cp, 4096);
    if (shape.sequenceParallel) {
      EXPECT_EQ(model.seq % (shape.cp * shape.tp), 0);
    }
  }
  EXPECT_EQ(degrees, (std::set<int64_t>{1, 2, 4}));
}

// 6 experts on 8 devices: EP divides the experts and DP (1, 2; 3 and 6 never divide a power-of-two
// DP), needs sequence parallelism with TP > 1, and a dense model gets EP 1 only.
TEST(HybridSearch, ExpertParallelDividesTheExpertsAndDataParallel) {
  HybridModel model = smallModel();
  for (const auto& shape : hybridShapes(model, smallSpace())) EXPECT_EQ(shape.ep, 1);
  const size_t denseShapes = hybridShapes(model, smallSpace()).size();
  model.experts = 6;
  model.expertSlots = 171;  // odd: no TP or CP cuts it
  std::set<int64_t> degrees;
  for (const auto& shape : hybridShapes(model, smallSpace())) {
    degrees.insert(shape.ep);
    EXPECT_EQ(shape.dp % shape.ep, 0);
    EXPECT_EQ(model.experts % shape.ep, 0);
    EXPECT_FALSE(shape.sequenceParallel) << "171 slots do not split over TP";
    EXPECT_FALSE(shape.ep > 1 && shape.tp > 1) << "EP with TP needs sequence parallelism";
  }
  EXPECT_EQ(degrees, (std::set<int64_t>{1, 2}));
  model.experts = 8;
  model.expertSlots = model.seq * 2 / 8;
  degrees.clear();
  size_t withTensorParallel = 0;
  for (const auto& shape : hybridShapes(model, smallSpace())) {
    degrees.insert(shape.ep);
    if (shape.ep > 1 && shape.tp > 1) {
      EXPECT_TRUE(shape.sequenceParallel);
      ++withTensorParallel;
    }
  }
  EXPECT_EQ(degrees, (std::set<int64_t>{1, 2, 4, 8}));
  EXPECT_GT(withTensorParallel, 0U);
  EXPECT_GT(hybridShapes(model, smallSpace()).size(), denseShapes);
}

TEST(HybridSearch, CandidatesCrossEveryShapeWithEveryAllowedSaver) {
  const auto shapes = hybridShapes(smallModel(), smallSpace());
  const auto candidates = hybridCandidates(smallModel(), smallSpace());
  size_t expected = 0;
  for (const auto& shape : shapes) {
    // Three recompute modes; ZeRO 0 always, 1 with DP > 1, 2 and 3 with DP > 1 and PP 1.
    const size_t zeros = shape.dp == 1 ? 1 : shape.pp > 1 ? 2 : 4;
    expected += 3 * zeros;
  }
  EXPECT_EQ(candidates.size(), expected);
  for (const auto& c : candidates) {
    EXPECT_FALSE(c.zero > 0 && c.dp == 1);
    EXPECT_FALSE(c.zero >= 2 && c.pp > 1);
  }
}

/// A toy screen: memory falls with each saver and with PP x TP, time rises with each saver.
HybridScore toyScore(const HybridCandidate& c) {
  const int saver = (c.recompute == ir::Recompute::kSelective ? 2
                     : c.recompute == ir::Recompute::kFull    ? 3
                                                              : 0) +
                    c.zero;
  HybridScore score;
  score.peakBytes = 100 / (c.tp * c.pp) + 40 - 8 * saver;
  score.stepSeconds =
      1.0 + 0.1 * saver + 0.01 * static_cast<double>(c.pp) + 0.001 * static_cast<double>(c.mbs);
  score.fits = score.peakBytes <= 40;
  return score;
}

TEST(HybridSearch, ScreensEverythingAndTheFullEvaluatorRanksTheLeaders) {
  int screened = 0;
  auto screen = [&](const HybridCandidate& c) -> Expected<HybridScore> {
    ++screened;
    return toyScore(c);
  };
  // The full evaluator disagrees: it penalises micro-batch size 1 and rejects interleaving for
  // memory, so the ranking must come from it and the search must go on down the screened list.
  int full = 0;
  auto evaluate = [&](const HybridCandidate& c) -> Expected<HybridScore> {
    ++full;
    HybridScore score = toyScore(c);
    if (c.mbs == 1) score.stepSeconds += 0.5;
    if (c.vpp == 2) score.fits = false;
    return score;
  };
  const int refine = 5;
  auto result = searchHybrid(smallModel(), smallSpace(), screen, evaluate, refine);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->screened, screened);
  EXPECT_EQ(screened, static_cast<int>(hybridCandidates(smallModel(), smallSpace()).size()));
  EXPECT_EQ(result->refined, full);
  EXPECT_LE(full, 3 * refine);
  EXPECT_GT(full, refine) << "interleaved leaders were rejected, so the search went further";
  ASSERT_EQ(result->ranked.size(), static_cast<size_t>(refine));
  for (size_t i = 1; i < result->ranked.size(); ++i) {
    EXPECT_LE(result->ranked[i - 1].second.stepSeconds, result->ranked[i].second.stepSeconds);
  }
  for (const auto& [candidate, score] : result->ranked) {
    EXPECT_TRUE(score.fits);
    EXPECT_EQ(candidate.vpp, 1);
    EXPECT_EQ(score.stepSeconds, (*evaluate(candidate)).stepSeconds) << "ranked on the full score";
    // PP 1, TP 1 needs at least 140 - 8 x 6 bytes: nothing brings it under 40.
    EXPECT_FALSE(candidate.tp == 1 && candidate.pp == 1);
  }
  EXPECT_GT(result->ranked.front().first.mbs, 1) << "the full evaluator's penalty decides";
  // Same inputs, same ranking.
  auto again = searchHybrid(smallModel(), smallSpace(), screen, evaluate, refine);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->ranked.size(), result->ranked.size());
  for (size_t i = 0; i < result->ranked.size(); ++i) {
    EXPECT_EQ(again->ranked[i].first.pp, result->ranked[i].first.pp);
    EXPECT_EQ(again->ranked[i].first.tp, result->ranked[i].first.tp);
    EXPECT_EQ(again->ranked[i].first.mbs, result->ranked[i].first.mbs);
    EXPECT_EQ(again->ranked[i].first.recompute, result->ranked[i].first.recompute);
    EXPECT_EQ(again->ranked[i].first.sequenceParallel, result->ranked[i].first.sequenceParallel);
  }
}

TEST(HybridSearch, EveryShapeKeepsItsBestCandidateToSayWhyItLost) {
  auto screen = [](const HybridCandidate& c) -> Expected<HybridScore> { return toyScore(c); };
  auto full = [](const HybridCandidate& c) -> Expected<HybridScore> {
    HybridScore score = toyScore(c);
    if (c.vpp == 2) score.fits = false;
    return score;
  };
  auto result = searchHybrid(smallModel(), smallSpace(), screen, full, 5);
  ASSERT_TRUE(result.ok());
  std::set<std::tuple<int64_t, int64_t, int64_t>> shapes;
  for (const auto& shape : hybridShapes(smallModel(), smallSpace())) {
    shapes.insert({shape.tp, shape.pp, shape.dp});
  }
  ASSERT_EQ(result->shapeLeaders.size(), shapes.size()) << "one leader per TP x PP x DP";
  const std::vector<HybridCandidate> all = hybridCandidates(smallModel(), smallSpace());
  bool seenOver = false;
  for (const auto& [leader, score] : result->shapeLeaders) {
    EXPECT_EQ(score.stepSeconds, toyScore(leader).stepSeconds);
    EXPECT_FALSE(seenOver && score.fits) << "those that fit come first";
    seenOver |= !score.fits;
    // No candidate of the same shape beats it: faster and fitting, or leaner when none fits.
    for (const HybridCandidate& other : all) {
      if (other.tp != leader.tp || other.pp != leader.pp || other.dp != leader.dp) continue;
      const HybridScore o = toyScore(other);
      if (score.fits) {
        EXPECT_FALSE(o.fits && o.stepSeconds < score.stepSeconds);
      } else {
        EXPECT_FALSE(o.fits);
        EXPECT_GE(o.peakBytes, score.peakBytes);
      }
    }
  }
  EXPECT_TRUE(seenOver) << "TP 1 PP 1 never fits";
  EXPECT_DOUBLE_EQ(result->screenBestSeconds, result->shapeLeaders.front().second.stepSeconds);
  ASSERT_FALSE(result->overOnFull.empty()) << "the interleaved leaders are over on the full model";
  for (const auto& [candidate, score] : result->overOnFull) {
    EXPECT_EQ(candidate.vpp, 2);
    EXPECT_FALSE(score.fits);
  }
}

TEST(HybridSearch, NothingFitsReportsTheLeanestAndAnEmptySpaceFails) {
  auto never = [](const HybridCandidate& c) -> Expected<HybridScore> {
    return HybridScore{1.0, 1000 - 10 * c.tp * c.pp, false};
  };
  auto result = searchHybrid(smallModel(), smallSpace(), never, never, 4);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->ranked.empty());
  EXPECT_EQ(result->leanest.first.tp * result->leanest.first.pp, 8);
  HybridSpace odd = smallSpace();
  odd.globalBatch = 3;
  odd.microBatchSizes = {2};
  auto empty = searchHybrid(smallModel(), odd, never, never, 4);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("no parallel shape fits 8 devices"), std::string::npos);
  EXPECT_NE(empty.error().message.find("--gbs 8 would"), std::string::npos)
      << empty.error().message;
}

}  // namespace
}  // namespace autopar::search
