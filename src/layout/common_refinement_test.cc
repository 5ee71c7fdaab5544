#include "layout/common_refinement.h"

#include <gtest/gtest.h>

namespace autopar::layout {
namespace {

TEST(CommonRefinement, SplitsAxesThatTheOtherMatrixCuts) {
  auto common = commonRefinement(DeviceMatrix({4, 2}), DeviceMatrix({2, 4}));
  ASSERT_TRUE(common.has_value());
  EXPECT_EQ(common->matrix, DeviceMatrix({2, 2, 2}));
  EXPECT_EQ(common->sourceAxes, (AxisRefinement{{0, 1}, {2}}));
  EXPECT_EQ(common->targetAxes, (AxisRefinement{{0}, {1, 2}}));
}

TEST(CommonRefinement, OfAMatrixWithItselfDropsUnitAxes) {
  auto common = commonRefinement(DeviceMatrix({2, 1, 4}), DeviceMatrix({2, 1, 4}));
  ASSERT_TRUE(common.has_value());
  EXPECT_EQ(common->matrix, DeviceMatrix({2, 4}));
  EXPECT_EQ(common->sourceAxes, (AxisRefinement{{0}, {}, {1}}));
  EXPECT_EQ(common->targetAxes, common->sourceAxes);
}

TEST(CommonRefinement, KeepsTheRanks) {
  const std::vector<int> ranks = {7, 6, 5, 4, 3, 2, 1, 0};
  auto common = commonRefinement(DeviceMatrix({8}, ranks), DeviceMatrix({2, 4}, ranks));
  ASSERT_TRUE(common.has_value());
  EXPECT_EQ(common->matrix, DeviceMatrix({2, 4}, ranks));
  EXPECT_EQ(common->sourceAxes, (AxisRefinement{{0, 1}}));
  EXPECT_EQ(common->targetAxes, (AxisRefinement{{0}, {1}}));
}

TEST(CommonRefinement, NoneWhenSuffixProductsDoNotChain) {
  EXPECT_FALSE(commonRefinement(DeviceMatrix({2, 3}), DeviceMatrix({3, 2})).has_value());
  EXPECT_FALSE(commonRefinement(DeviceMatrix({4, 3}), DeviceMatrix({3, 4})).has_value());
  auto chained = commonRefinement(DeviceMatrix({6, 2}), DeviceMatrix({12}));
  ASSERT_TRUE(chained.has_value());
  EXPECT_EQ(chained->matrix, DeviceMatrix({6, 2}));
}

TEST(CommonRefinement, NoneWhenRanksAreInADifferentOrder) {
  EXPECT_FALSE(commonRefinement(DeviceMatrix({4}, {0, 1, 2, 3}), DeviceMatrix({4}, {1, 0, 2, 3}))
                   .has_value());
}

TEST(CommonRefinement, SingleDeviceRefinesToAnEmptyMatrix) {
  auto common = commonRefinement(DeviceMatrix({1}), DeviceMatrix(std::vector<int64_t>{}));
  ASSERT_TRUE(common.has_value());
  EXPECT_EQ(common->matrix, DeviceMatrix(std::vector<int64_t>{}));
  EXPECT_EQ(common->sourceAxes, (AxisRefinement{{}}));
  EXPECT_TRUE(common->targetAxes.empty());
}

TEST(RefineLayout, ReplacesEachAxisByItsRefinedAxes) {
  auto common = commonRefinement(DeviceMatrix({4, 2}), DeviceMatrix({2, 4}));
  ASSERT_TRUE(common.has_value());
  auto layout = TensorLayout::fromTensorMap(DeviceMatrix({4, 2}), {1, -1}, {8, 6});
  ASSERT_TRUE(layout.ok());
  layout->partialAxes = {1};
  const TensorLayout refined = refineLayout(*layout, common->matrix, common->sourceAxes);
  EXPECT_EQ(refined.deviceMatrix, DeviceMatrix({2, 2, 2}));
  EXPECT_EQ(refined.dimAxes, (std::vector<std::vector<int>>{{0, 1}, {}}));
  EXPECT_EQ(refined.partialAxes, (std::vector<int>{2}));
  ASSERT_TRUE(refined.validate().ok());
  // Every device holds the same rows before and after refinement.
  for (int64_t device = 0; device < 8; ++device) {
    EXPECT_EQ(refined.sliceRanges(device), layout->sliceRanges(device)) << device;
  }
}

}  // namespace
}  // namespace autopar::layout
