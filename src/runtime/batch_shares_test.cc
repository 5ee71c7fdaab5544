#include "runtime/batch_shares.h"

#include <gtest/gtest.h>

namespace autopar::runtime {
namespace {

using layout::TensorLayout;

/// A [2, 2] device matrix (DP 2 outer, TP 2 inner) over `ranks`.
TensorLayout cut(ir::Shape shape, std::vector<std::vector<int>> dimAxes,
                 std::vector<int> ranks = {0, 1, 2, 3}) {
  return TensorLayout{
      layout::DeviceMatrix({2, 2}, ranks), std::move(dimAxes), {}, std::move(shape)};
}

BatchShares sharesOf(std::vector<int64_t> shares, int ranksPerStage = 4) {
  auto made = BatchShares::over(std::move(shares), ranksPerStage);
  EXPECT_TRUE(made) << made.error().message;
  return made ? *made : BatchShares();
}

TEST(BatchSharesTest, TheBatchSplitsInTheReplicasShares) {
  const BatchShares shares = sharesOf({3, 1});
  const TensorLayout tokens = cut({4, 128}, {{0}, {}});
  EXPECT_EQ(*shares.rangesOf(tokens, 0), (BlockRanges{{0, 3}, {0, 128}}));
  EXPECT_EQ(*shares.rangesOf(tokens, 1), (BlockRanges{{0, 3}, {0, 128}}));
  EXPECT_EQ(*shares.rangesOf(tokens, 3), (BlockRanges{{3, 4}, {0, 128}}));
  // Batch x sequence after a reshape: whole samples of 128 rows each.
  EXPECT_EQ(*shares.rangesOf(cut({512, 64}, {{0}, {}}), 2), (BlockRanges{{384, 512}, {0, 64}}));
}

TEST(BatchSharesTest, ACutInsideAReplicaStaysEven) {
  const BatchShares shares = sharesOf({3, 1});
  // Hidden cut over TP (axis 1), within each replica.
  EXPECT_EQ(*shares.rangesOf(cut({4, 128, 64}, {{0}, {}, {1}}), 3),
            (BlockRanges{{3, 4}, {0, 128}, {32, 64}}));
  // The batch cut over DP and TP: each replica's share halved between its two ranks.
  const TensorLayout both = cut({8, 16}, {{0, 1}, {}});
  EXPECT_EQ(*shares.rangesOf(both, 0), (BlockRanges{{0, 3}, {0, 16}}));
  EXPECT_EQ(*shares.rangesOf(both, 1), (BlockRanges{{3, 6}, {0, 16}}));
  EXPECT_EQ(*shares.rangesOf(both, 2), (BlockRanges{{6, 7}, {0, 16}}));
  EXPECT_EQ(*shares.rangesOf(both, 3), (BlockRanges{{7, 8}, {0, 16}}));
}

TEST(BatchSharesTest, LaterStagesRepeatTheReplicas) {
  const BatchShares shares = sharesOf({1, 3});
  EXPECT_EQ(shares.replicaOf(5), 0);
  EXPECT_EQ(shares.replicaOf(6), 1);
  EXPECT_EQ(*shares.rangesOf(cut({4, 8}, {{0}, {}}, {4, 5, 6, 7}), 5),
            (BlockRanges{{0, 1}, {0, 8}}));
}

TEST(BatchSharesTest, SharesThatDoNotDivideAreRefused) {
  const BatchShares shares = sharesOf({2, 1});
  auto ranges = shares.rangesOf(cut({4, 8}, {{0}, {}}), 0);
  ASSERT_FALSE(ranges);
  EXPECT_EQ(ranges.error().message,
            "dim 0 of size 4 does not divide in the data-parallel shares 2:1");
  EXPECT_FALSE(BatchShares::over({2, 1}, 3));
}

TEST(BatchSharesTest, EqualSharesAreTheEvenSplit) {
  const BatchShares shares = sharesOf({2, 2});
  EXPECT_TRUE(shares.even());
  EXPECT_FALSE(shares.crossesShares(layout::DeviceMatrix({2, 2}), 0, 0));
  EXPECT_EQ(*shares.rangesOf(cut({4, 8}, {{0}, {}}), 3), (BlockRanges{{2, 4}, {0, 8}}));
}

TEST(BatchSharesTest, CollectivesAcrossReplicasAreFlagged) {
  const BatchShares shares = sharesOf({3, 1});
  const layout::DeviceMatrix matrix({2, 2});
  EXPECT_TRUE(shares.crossesShares(matrix, 0, 1));
  EXPECT_FALSE(shares.crossesShares(matrix, 1, 1));
}

TEST(BatchSharesTest, TheBatchMustBeCutOverEveryReplica) {
  const BatchShares shares = sharesOf({3, 1});
  EXPECT_TRUE(shares.checkBatchCut(cut({4, 8}, {{0}, {}}), 2));
  const Status whole = shares.checkBatchCut(cut({4, 8}, {{}, {}}), 2);
  ASSERT_FALSE(whole);
  EXPECT_EQ(whole.error().message,
            "its batch (dim 0) is not cut; uneven data-parallel shares need it cut over every "
            "replica");
  // Cut over TP only: both blocks in one replica.
  const Status inside = shares.checkBatchCut(cut({4, 8}, {{1}, {}}), 2);
  ASSERT_FALSE(inside);
  EXPECT_EQ(inside.error().message,
            "its batch (dim 0) is cut over 1 of the 2 data-parallel replicas; uneven shares need "
            "it cut over every replica");
}

}  // namespace
}  // namespace autopar::runtime
