// Shape inference and costs of the data-movement families: Gather, Reshape, Transpose, Concat,
// Slice.

#include <gtest/gtest.h>

#include "ir/op_semantics.h"
#include "ir/op_semantics_test_util.h"

namespace autopar::ir {
namespace {

using testing::inferError;
using testing::savedToString;
using testing::semantics;
using testing::type;

// ---- gather ----

TEST(GatherSemantics, EmbeddingLookup) {
  auto op =
      semantics(OpKind::kGather, {}, {type({100, 16}, DType::kBF16), type({4, 8}, DType::kI64)});
  EXPECT_EQ(op.output, type({4, 8, 16}, DType::kBF16));
  EXPECT_EQ(op.flops, 0);
  // Gathered rows read and written (2 * 512 elements * 2 bytes) plus 32 int64 indices; the rest
  // of the table is not touched.
  EXPECT_EQ(op.bytes, 2048 + 256);
  EXPECT_EQ(op.backward.flops, 512);  // scatter-add, one add per output element
  EXPECT_EQ(savedToString(op.backward), "in1");
}

TEST(GatherSemantics, TrailingTableDimsFollowTheIndices) {
  auto op = semantics(OpKind::kGather, {}, {type({100, 4, 2}), type({5}, DType::kI32)});
  EXPECT_EQ(op.output, type({5, 4, 2}));
  EXPECT_EQ(semantics(OpKind::kGather, {}, {type({10}), type({3}, DType::kI8)}).output, type({3}));
}

TEST(GatherSemantics, Errors) {
  EXPECT_EQ(inferError(OpKind::kGather, {}, {type({100, 16}), type({4})}),
            "Gather: inputs[1] dtype fp32, expected an integer type (int64, int32 or int8)");
  EXPECT_EQ(inferError(OpKind::kGather, {}, {type({100, 16}), type({4}, DType::kBool)}),
            "Gather: inputs[1] dtype bool, expected an integer type (int64, int32 or int8)");
  EXPECT_EQ(inferError(OpKind::kGather, {}, {type({}), type({4}, DType::kI64)}),
            "Gather: inputs[0] must have rank >= 1, got rank 0");
  EXPECT_EQ(inferError(OpKind::kGather, {}, {type({100, 16})}), "Gather: expected 2 inputs, got 1");
}

// ---- reshape ----

OpAttrs newShape(Shape shape) {
  OpAttrs attrs;
  attrs.newShape = std::move(shape);
  return attrs;
}

TEST(ReshapeSemantics, IsAFreeView) {
  auto op = semantics(OpKind::kReshape, newShape({6, -1}), {type({2, 3, 4}, DType::kBF16)});
  EXPECT_EQ(op.output, type({6, 4}, DType::kBF16));
  EXPECT_EQ(op.flops, 0);
  EXPECT_EQ(op.bytes, 0);
  EXPECT_EQ(op.backward.flops, 0);
  EXPECT_EQ(savedToString(op.backward), "");
  EXPECT_EQ(semantics(OpKind::kReshape, newShape({24}), {type({2, 3, 4})}).output, type({24}));
  EXPECT_EQ(semantics(OpKind::kReshape, newShape({}), {type({1, 1})}).output, type({}));
}

TEST(ReshapeSemantics, Errors) {
  const std::vector<TensorType> x{type({2, 3, 4})};
  EXPECT_EQ(inferError(OpKind::kReshape, newShape({-1, -1}), x),
            "Reshape: attrs.newShape has more than one -1");
  EXPECT_EQ(inferError(OpKind::kReshape, newShape({2, 0}), x),
            "Reshape: attrs.newShape[1] is 0, expected a positive size or -1");
  EXPECT_EQ(inferError(OpKind::kReshape, newShape({-2, 12}), x),
            "Reshape: attrs.newShape[0] is -2, expected a positive size or -1");
  EXPECT_EQ(inferError(OpKind::kReshape, newShape({-1, 5}), x),
            "Reshape: attrs.newShape [-1,5] cannot hold the 24 elements of inputs[0] [2,3,4]");
  EXPECT_EQ(inferError(OpKind::kReshape, newShape({2, 5}), x),
            "Reshape: attrs.newShape [2,5] has 10 elements but inputs[0] [2,3,4] has 24");
}

// ---- transpose ----

OpAttrs perm(std::vector<int64_t> order) {
  OpAttrs attrs;
  attrs.perm = std::move(order);
  return attrs;
}

TEST(TransposeSemantics, OutputDimIIsInputDimPermI) {
  auto op = semantics(OpKind::kTranspose, perm({2, 0, 1}), {type({2, 3, 4})});
  EXPECT_EQ(op.output, type({4, 2, 3}));
  EXPECT_EQ(op.flops, 0);
  EXPECT_EQ(op.bytes, 2 * 24 * 4);  // a real copy
  EXPECT_EQ(op.backward.flops, 0);
  EXPECT_EQ(savedToString(op.backward), "");
}

TEST(TransposeSemantics, Errors) {
  const std::vector<TensorType> x{type({2, 3, 4})};
  EXPECT_EQ(inferError(OpKind::kTranspose, perm({0, 1}), x),
            "Transpose: attrs.perm has size 2, expected 3 (the rank of inputs[0])");
  EXPECT_EQ(inferError(OpKind::kTranspose, perm({0, 0, 1}), x),
            "Transpose: attrs.perm [0,0,1] is not a permutation of 0..2");
  EXPECT_EQ(inferError(OpKind::kTranspose, perm({0, 1, 3}), x),
            "Transpose: attrs.perm [0,1,3] is not a permutation of 0..2");
  EXPECT_EQ(inferError(OpKind::kTranspose, perm({-1, 0, 1}), x),
            "Transpose: attrs.perm [-1,0,1] is not a permutation of 0..2");
}

// ---- concat ----

OpAttrs axis(int64_t value) {
  OpAttrs attrs;
  attrs.axis = value;
  return attrs;
}

TEST(ConcatSemantics, SumsTheAxis) {
  auto op = semantics(OpKind::kConcat, axis(1), {type({2, 3}), type({2, 5})});
  EXPECT_EQ(op.output, type({2, 8}));
  EXPECT_EQ(op.flops, 0);
  EXPECT_EQ(op.bytes, (6 + 10 + 16) * 4);
  EXPECT_EQ(savedToString(op.backward), "");
  EXPECT_EQ(semantics(OpKind::kConcat, axis(-2), {type({1, 3}), type({4, 3}), type({2, 3})}).output,
            type({7, 3}));
  EXPECT_EQ(semantics(OpKind::kConcat, axis(0), {type({5})}).output, type({5}));
}

TEST(ConcatSemantics, Errors) {
  EXPECT_EQ(inferError(OpKind::kConcat, axis(0), {}), "Concat: expected at least 1 input, got 0");
  EXPECT_EQ(inferError(OpKind::kConcat, axis(2), {type({2, 3}), type({2, 3})}),
            "Concat: attrs.axis is 2, expected a value in [-2, 1]");
  EXPECT_EQ(inferError(OpKind::kConcat, axis(0), {type({2, 3}), type({6})}),
            "Concat: inputs[1] has rank 1, expected 2 (the rank of inputs[0])");
  EXPECT_EQ(inferError(OpKind::kConcat, axis(0), {type({2, 3}), type({2, 3}, DType::kF16)}),
            "Concat: inputs[1] dtype fp16 differs from inputs[0] dtype fp32");
  EXPECT_EQ(inferError(OpKind::kConcat, axis(1), {type({2, 3}), type({2, 3}), type({4, 3})}),
            "Concat: inputs[2] dim 0 is 4 but inputs[0] dim 0 is 2");
}

// ---- slice ----

OpAttrs range(std::vector<int64_t> starts, std::vector<int64_t> ends) {
  OpAttrs attrs;
  attrs.starts = std::move(starts);
  attrs.ends = std::move(ends);
  return attrs;
}

TEST(SliceSemantics, HalfOpenRanges) {
  auto op = semantics(OpKind::kSlice, range({1, 0}, {3, 6}), {type({4, 6}, DType::kBF16)});
  EXPECT_EQ(op.output, type({2, 6}, DType::kBF16));
  EXPECT_EQ(op.flops, 0);
  EXPECT_EQ(op.bytes, 2 * 12 * 2);  // only the slice is read, then written
  EXPECT_EQ(op.backward.flops, 0);
  EXPECT_EQ(savedToString(op.backward), "");
}

TEST(SliceSemantics, Errors) {
  const std::vector<TensorType> x{type({4, 6})};
  EXPECT_EQ(inferError(OpKind::kSlice, range({0}, {4, 6}), x),
            "Slice: attrs.starts has size 1, expected 2 (the rank of inputs[0])");
  EXPECT_EQ(inferError(OpKind::kSlice, range({0, 0}, {4, 6, 1}), x),
            "Slice: attrs.ends has size 3, expected 2 (the rank of inputs[0])");
  EXPECT_EQ(inferError(OpKind::kSlice, range({0, 2}, {4, 2}), x),
            "Slice: attrs.starts[1] and attrs.ends[1] give [2, 2), expected 0 <= start < end <= 6");
  EXPECT_EQ(
      inferError(OpKind::kSlice, range({-1, 0}, {4, 6}), x),
      "Slice: attrs.starts[0] and attrs.ends[0] give [-1, 4), expected 0 <= start < end <= 4");
  EXPECT_EQ(inferError(OpKind::kSlice, range({0, 0}, {4, 7}), x),
            "Slice: attrs.starts[1] and attrs.ends[1] give [0, 7), expected 0 <= start < end <= 6");
}

}  // namespace
}  // namespace autopar::ir
