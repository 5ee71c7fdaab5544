// Tests of the test-only reference interpreter: it must execute primitives exactly and reject
// wrong plans, or the property test would prove nothing.

#include <gtest/gtest.h>

#include "layout/reference_interpreter_test_util.h"

namespace autopar::layout::testing {
namespace {

TensorLayout layoutOf(DeviceMatrix matrix, std::vector<std::vector<int>> dimAxes, ir::Shape shape,
                      std::vector<int> partialAxes = {}) {
  TensorLayout layout;
  layout.deviceMatrix = std::move(matrix);
  layout.dimAxes = std::move(dimAxes);
  layout.shape = std::move(shape);
  layout.partialAxes = std::move(partialAxes);
  return layout;
}

RedistStep stepOf(PrimitiveKind kind, const DeviceMatrix& matrix, int axis, int dim,
                  int splitDim = -1) {
  RedistStep step;
  step.kind = kind;
  step.matrix = matrix;
  step.axis = axis;
  step.dim = dim;
  step.splitDim = splitDim;
  return step;
}

Shard iotaTensor(const ir::Shape& shape) {
  Shard tensor{shape, std::vector<int64_t>(static_cast<size_t>(elementCount(shape)))};
  for (size_t i = 0; i < tensor.values.size(); ++i) tensor.values[i] = static_cast<int64_t>(i);
  return tensor;
}

TEST(ReferenceInterpreter, MaterialisesSlicesAndPartialSums) {
  std::mt19937_64 rng(1);
  const Shard full = iotaTensor({4, 2});  // rows {0,1} {2,3} {4,5} {6,7}
  const DeviceMatrix matrix({2, 2});
  const auto rows = materialise(full, layoutOf(matrix, {{1}, {}}, {4, 2}), rng);
  EXPECT_EQ(rows.at(0), (Shard{{2, 2}, {0, 1, 2, 3}}));
  EXPECT_EQ(rows.at(3), (Shard{{2, 2}, {4, 5, 6, 7}}));

  const auto partial = materialise(full, layoutOf(matrix, {{1}, {}}, {4, 2}, {0}), rng);
  // Devices 0 and 2 differ only on the partial axis 0; their sum is the true slice.
  EXPECT_EQ(sum({partial.at(0), partial.at(2)}), (Shard{{2, 2}, {0, 1, 2, 3}}));
  EXPECT_NE(partial.at(2), (Shard{{2, 2}, {0, 1, 2, 3}}));
}

TEST(ReferenceInterpreter, AllToAllMovesTheSplitBetweenDims) {
  std::mt19937_64 rng(1);
  const Shard full = iotaTensor({2, 2});
  const DeviceMatrix matrix({2});
  const auto rows = materialise(full, layoutOf(matrix, {{0}, {}}, {2, 2}), rng);
  const auto columns = execute(rows, {stepOf(PrimitiveKind::kAllToAll, matrix, 0, 0, 1)});
  EXPECT_EQ(columns.at(0), (Shard{{2, 1}, {0, 2}}));
  EXPECT_EQ(columns.at(1), (Shard{{2, 1}, {1, 3}}));
}

TEST(ReferenceInterpreter, RejectsGatheringTheMajorAxisFirst) {
  std::mt19937_64 rng(1);
  const Shard full = iotaTensor({8});
  const DeviceMatrix matrix({2, 4});
  const TensorLayout from = layoutOf(matrix, {{0, 1}}, {8});
  const TensorLayout to = TensorLayout::replicated(matrix, {8});
  const auto shards = materialise(full, from, rng);
  const auto minorFirst = execute(shards, {stepOf(PrimitiveKind::kAllGather, matrix, 1, 0),
                                           stepOf(PrimitiveKind::kAllGather, matrix, 0, 0)});
  EXPECT_EQ(compareWithTarget(minorFirst, full, to, true), "");
  const auto majorFirst = execute(shards, {stepOf(PrimitiveKind::kAllGather, matrix, 0, 0),
                                           stepOf(PrimitiveKind::kAllGather, matrix, 1, 0)});
  EXPECT_EQ(compareWithTarget(majorFirst, full, to, true), "rank 0 does not hold its target slice");
}

TEST(ReferenceInterpreter, RejectsAMissingReduction) {
  std::mt19937_64 rng(1);
  const Shard full = iotaTensor({4});
  const DeviceMatrix matrix({4});
  const TensorLayout partial = layoutOf(matrix, {{}}, {4}, {0});
  const TensorLayout replicated = TensorLayout::replicated(matrix, {4});
  const auto shards = materialise(full, partial, rng);
  EXPECT_EQ(compareWithTarget(shards, full, partial, false), "");
  EXPECT_EQ(compareWithTarget(shards, full, replicated, false),
            "rank 0 does not hold its target slice");
  const auto reduced = execute(shards, {stepOf(PrimitiveKind::kAllReduce, matrix, 0, -1)});
  EXPECT_EQ(compareWithTarget(reduced, full, replicated, false), "");
}

TEST(ReferenceInterpreter, ExactPartialsNeedZerosOffCoordinateZero) {
  std::mt19937_64 rng(1);
  const Shard full = iotaTensor({4});
  const DeviceMatrix matrix({2});
  const TensorLayout replicated = TensorLayout::replicated(matrix, {4});
  const TensorLayout partial = layoutOf(matrix, {{}}, {4}, {0});
  const auto shards = materialise(full, replicated, rng);
  EXPECT_EQ(compareWithTarget(shards, full, partial, true), "rank 1 is not zeroed");
  const auto made = execute(shards, {stepOf(PrimitiveKind::kMakePartial, matrix, 0, -1)});
  EXPECT_EQ(compareWithTarget(made, full, partial, true), "");
}

TEST(ReferenceInterpreter, ReportsAnImpossibleSplit) {
  std::mt19937_64 rng(1);
  const DeviceMatrix matrix({4});
  const auto shards = materialise(iotaTensor({6}), TensorLayout::replicated(matrix, {6}), rng);
  EXPECT_THROW(execute(shards, {stepOf(PrimitiveKind::kSplit, matrix, 0, 0)}), std::runtime_error);
}

}  // namespace
}  // namespace autopar::layout::testing
