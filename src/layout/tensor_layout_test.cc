#include "layout/tensor_layout.h"

#include <gtest/gtest.h>

#include <set>

namespace autopar::layout {
namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

TensorLayout layoutOf(DeviceMatrix matrix, std::vector<std::vector<int>> dimAxes, ir::Shape shape,
                      std::vector<int> partialAxes = {}) {
  TensorLayout layout;
  layout.deviceMatrix = std::move(matrix);
  layout.dimAxes = std::move(dimAxes);
  layout.shape = std::move(shape);
  layout.partialAxes = std::move(partialAxes);
  return layout;
}

std::string validationError(const TensorLayout& layout) {
  auto status = layout.validate();
  EXPECT_FALSE(status.ok()) << layout.toString();
  return status.ok() ? "" : status.error().message;
}

// Seed 002: MatMul ((2,1),(1,4)) on 8 devices has device matrix [2,4].
TEST(TensorLayout, SeedMatMulInputXIsRowBlocksOnTheOuterAxis) {
  const TensorLayout x = layoutOf(DeviceMatrix({2, 4}), {{0}, {}}, {64, 32});
  ASSERT_TRUE(x.validate().ok());
  EXPECT_EQ(x.tensorMap(), (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(x.sliceShape(), (ir::Shape{32, 32}));
  EXPECT_EQ(x.sliceElements(), 1024);
  for (int64_t device = 0; device < 8; ++device) {
    const int64_t firstRow = device < 4 ? 0 : 32;
    EXPECT_EQ(x.sliceRanges(device), (Ranges{{firstRow, firstRow + 32}, {0, 32}})) << device;
  }
}

TEST(TensorLayout, ReplicaAxesSplitNothingAndHoldNoPartialSum) {
  // Matrix [2, 4, 1, 3]: axis 0 splits dim 0, axis 3 holds partial sums, axis 2 is of size 1.
  const TensorLayout layout = layoutOf(DeviceMatrix({2, 4, 1, 3}), {{0}, {}}, {64, 32}, {3});
  EXPECT_EQ(layout.replicaAxes(), (std::vector<int>{1}));
  EXPECT_EQ(layout.withoutPartial().replicaAxes(), (std::vector<int>{1, 3}));
}

TEST(TensorLayout, SeedMatMulInputWIsColumnBlocksOnTheInnerAxis) {
  const TensorLayout w = layoutOf(DeviceMatrix({2, 4}), {{}, {1}}, {32, 128});
  ASSERT_TRUE(w.validate().ok());
  EXPECT_EQ(w.tensorMap(), (std::vector<int64_t>{-1, 0}));
  EXPECT_EQ(w.sliceShape(), (ir::Shape{32, 32}));
  // Column blocks go to {0,4}, {1,5}, {2,6}, {3,7}.
  for (int64_t block = 0; block < 4; ++block) {
    for (int64_t device : {block, block + 4}) {
      EXPECT_EQ(w.sliceRanges(device), (Ranges{{0, 32}, {block * 32, block * 32 + 32}})) << device;
    }
  }
  // Device 5 = coordinate (1,1) holds W columns 32..63.
  EXPECT_EQ(w.sliceRanges(5)[1], (std::pair<int64_t, int64_t>{32, 64}));
}

TEST(TensorLayout, FromTensorMapCountsAxesFromTheRight) {
  auto x = TensorLayout::fromTensorMap(DeviceMatrix({2, 4}), {1, -1}, {64, 32});
  ASSERT_TRUE(x.ok()) << x.error().message;
  EXPECT_EQ(x->dimAxes, (std::vector<std::vector<int>>{{0}, {}}));
  auto w = TensorLayout::fromTensorMap(DeviceMatrix({2, 4}), {-1, 0}, {32, 128});
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->dimAxes, (std::vector<std::vector<int>>{{}, {1}}));
  EXPECT_EQ(w->tensorMap(), (std::vector<int64_t>{-1, 0}));
}

TEST(TensorLayout, FromTensorMapRejectsBadMaps) {
  auto tooShort = TensorLayout::fromTensorMap(DeviceMatrix({2, 4}), {1}, {64, 32});
  ASSERT_FALSE(tooShort.ok());
  EXPECT_EQ(tooShort.error().message, "tensor map [1] has 1 entries but shape [64,32] has 2 dims");
  auto outOfRange = TensorLayout::fromTensorMap(DeviceMatrix({2, 4}), {2, -1}, {64, 32});
  ASSERT_FALSE(outOfRange.ok());
  EXPECT_EQ(outOfRange.error().message,
            "tensor map [2,-1]: entry 2 of dim 0 is not -1 or an axis of a 2-axis device matrix");
  auto notDividing = TensorLayout::fromTensorMap(DeviceMatrix({2, 4}), {-1, 0}, {64, 30});
  ASSERT_FALSE(notDividing.ok());
  EXPECT_EQ(notDividing.error().message, "dim 1 of size 30 does not divide into 4 parts");
}

TEST(TensorLayout, ValidateNamesTheOffendingDimOrAxis) {
  const DeviceMatrix matrix({2, 4});
  EXPECT_EQ(validationError(layoutOf(matrix, {{0}, {1}}, {64, 30})),
            "dim 1 of size 30 does not divide into 4 parts");
  EXPECT_EQ(validationError(layoutOf(matrix, {{0, 1}, {}}, {4, 32})),
            "dim 0 of size 4 does not divide into 8 parts");
  EXPECT_EQ(validationError(layoutOf(matrix, {{0}, {0}}, {64, 32})),
            "dim 1: axis 0 is already used by dim 0");
  EXPECT_EQ(validationError(layoutOf(matrix, {{1}, {}}, {64, 32}, {1})),
            "partialAxes: axis 1 is already used by dim 0");
  EXPECT_EQ(validationError(layoutOf(matrix, {{2}, {}}, {64, 32})),
            "dim 0: axis 2 is out of range for a device matrix of 2 axes");
  EXPECT_EQ(validationError(layoutOf(matrix, {{}, {}}, {64, 32}, {-1})),
            "partialAxes: axis -1 is out of range for a device matrix of 2 axes");
  EXPECT_EQ(validationError(layoutOf(matrix, {{0}}, {64, 32})),
            "dimAxes has 1 entries but shape [64,32] has 2 dims");
  EXPECT_EQ(validationError(layoutOf(matrix, {{}, {}}, {64, 32}, {1, 0})),
            "partialAxes must be sorted");
}

TEST(TensorLayout, DimSplitByTwoAxesNumbersPartsMajorFirst) {
  // Dim 0 split by axes 1 then 0: part = coord[1] * 2 + coord[0].
  const TensorLayout layout = layoutOf(DeviceMatrix({2, 4}), {{1, 0}, {}}, {16, 3});
  ASSERT_TRUE(layout.validate().ok());
  EXPECT_EQ(layout.cutsOfDim(0), 8);
  EXPECT_EQ(layout.cutsOfDim(1), 1);
  EXPECT_EQ(layout.tensorMap(), (std::vector<int64_t>{0, -1}));
  // Device 6 = coordinate (1,2): part 2*2+1 = 5, rows 10..11.
  EXPECT_EQ(layout.sliceRanges(6), (Ranges{{10, 12}, {0, 3}}));
  std::set<int64_t> firstRows;
  for (int64_t device = 0; device < 8; ++device)
    firstRows.insert(layout.sliceRanges(device)[0].first);
  EXPECT_EQ(firstRows.size(), 8U);
  EXPECT_EQ(layout.toString(), "{matrix=[2,4] map=[(0,1),-1] shape=[16,3]}");
}

TEST(TensorLayout, ToStringUsesTheSeedsNumbering) {
  const DeviceMatrix matrix({2, 4});
  EXPECT_EQ(layoutOf(matrix, {{0}, {}}, {64, 32}).toString(),
            "{matrix=[2,4] map=[1,-1] shape=[64,32]}");
  EXPECT_EQ(layoutOf(matrix, {{}, {}}, {64, 32}, {0}).toString(),
            "{matrix=[2,4] map=[-1,-1] shape=[64,32] partial=[1]}");
  EXPECT_EQ(layoutOf(DeviceMatrix({2, 2, 2}), {{}}, {8}, {0, 2}).toString(),
            "{matrix=[2,2,2] map=[-1] shape=[8] partial=[0,2]}");
  EXPECT_EQ(layoutOf(DeviceMatrix({2}, {3, 1}), {{0}}, {8}).toString(),
            "{matrix=[2] ranks=[3,1] map=[0] shape=[8]}");
}

TEST(TensorLayout, ReplicatedAndWithoutPartial) {
  const TensorLayout replicated = TensorLayout::replicated(DeviceMatrix({2, 4}), {64, 32});
  EXPECT_EQ(replicated.dimAxes, (std::vector<std::vector<int>>{{}, {}}));
  EXPECT_TRUE(replicated.partialAxes.empty());
  EXPECT_EQ(replicated.sliceShape(), (ir::Shape{64, 32}));
  EXPECT_EQ(replicated.tensorMap(), (std::vector<int64_t>{-1, -1}));

  const TensorLayout partial = layoutOf(DeviceMatrix({2, 4}), {{0}, {}}, {64, 32}, {1});
  ASSERT_TRUE(partial.validate().ok());
  const TensorLayout full = partial.withoutPartial();
  EXPECT_TRUE(full.partialAxes.empty());
  EXPECT_EQ(full.dimAxes, partial.dimAxes);
  EXPECT_NE(full, partial);
}

TEST(TensorLayout, ScalarHasOneElementSlice) {
  const TensorLayout scalar = TensorLayout::replicated(DeviceMatrix({4}), {});
  ASSERT_TRUE(scalar.validate().ok());
  EXPECT_EQ(scalar.sliceElements(), 1);
  EXPECT_TRUE(scalar.sliceRanges(3).empty());
  EXPECT_EQ(scalar.toString(), "{matrix=[4] map=[] shape=[]}");
}

}  // namespace
}  // namespace autopar::layout
