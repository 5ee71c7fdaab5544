// Shape inference, FLOPs, bytes and backward rules: dispatch, matmul, elementwise, softmax, norm
// and reduce families. Data movement and transformer ops are in op_semantics_*_test.cc.

#include "ir/op_semantics.h"

#include <gtest/gtest.h>

#include <set>

#include "ir/op_semantics_test_util.h"

namespace autopar::ir {
namespace {

using testing::inferError;
using testing::savedToString;
using testing::semantics;
using testing::type;

struct Example {
  OpKind kind;
  OpAttrs attrs;
  std::vector<TensorType> inputs;
};

OpAttrs withHeads(int64_t heads) {
  OpAttrs attrs;
  attrs.numHeads = heads;
  return attrs;
}

// One valid op of every kind.
std::vector<Example> oneOfEachKind() {
  const TensorType x = type({2, 4, 8});
  OpAttrs reshape;
  reshape.newShape = {8, 8};
  OpAttrs transpose;
  transpose.perm = {2, 0, 1};
  OpAttrs slice;
  slice.starts = {0, 0, 0};
  slice.ends = {1, 4, 8};
  OpAttrs topTwo;
  topTwo.topK = 2;
  OpAttrs opaque;
  opaque.opaqueType = "LpNormalization";
  opaque.outputTypes = {x};
  return {
      {OpKind::kMatMul, {}, {x, type({8, 3})}},
      {OpKind::kBatchMatMul, {}, {x, type({2, 8, 3})}},
      {OpKind::kAdd, {}, {x, x}},
      {OpKind::kSub, {}, {x, x}},
      {OpKind::kMul, {}, {x, x}},
      {OpKind::kDiv, {}, {x, x}},
      {OpKind::kReLU, {}, {x}},
      {OpKind::kGeLU, {}, {x}},
      {OpKind::kSiLU, {}, {x}},
      {OpKind::kTanh, {}, {x}},
      {OpKind::kSigmoid, {}, {x}},
      {OpKind::kExp, {}, {x}},
      {OpKind::kNeg, {}, {x}},
      {OpKind::kSqrt, {}, {x}},
      {OpKind::kCast, {}, {x}},
      {OpKind::kDropout, {}, {x}},
      {OpKind::kSoftmax, {}, {x}},
      {OpKind::kLayerNorm, {}, {x, type({8}), type({8})}},
      {OpKind::kRMSNorm, {}, {x, type({8})}},
      {OpKind::kReduceSum, {}, {x}},
      {OpKind::kReduceMean, {}, {x}},
      {OpKind::kReduceMax, {}, {x}},
      {OpKind::kGather, {}, {type({10, 8}), type({2, 4}, DType::kI64)}},
      {OpKind::kReshape, reshape, {x}},
      {OpKind::kTranspose, transpose, {x}},
      {OpKind::kConcat, {}, {x, x}},
      {OpKind::kSlice, slice, {x}},
      {OpKind::kFlashAttention, withHeads(2), {x, x, x}},
      {OpKind::kRotary, withHeads(2), {x}},
      {OpKind::kCrossEntropy, {}, {x, type({2, 4}, DType::kI32)}},
      {OpKind::kMoEDispatch, topTwo, {x, type({2, 4, 4})}},
      {OpKind::kMoECombine, topTwo, {type({2, 4, 2, 8}), type({2, 4, 4})}},
      {OpKind::kOpaque, opaque, {x}},
  };
}

TEST(OpSemanticsDispatch, EveryKindInfersExactlyOneOutput) {
  std::set<OpKind> covered;
  for (const auto& example : oneOfEachKind()) {
    SCOPED_TRACE(std::string(opKindName(example.kind)));
    auto outputs = inferOutputTypes(example.kind, example.attrs, example.inputs);
    ASSERT_TRUE(outputs.ok()) << outputs.error().message;
    EXPECT_EQ(outputs->size(), 1u);
    EXPECT_GE(forwardFlops(example.kind, example.attrs, example.inputs, *outputs), 0);
    EXPECT_GE(forwardBytes(example.kind, example.attrs, example.inputs, *outputs), 0);
    covered.insert(example.kind);
  }
  EXPECT_EQ(covered.size(), allOpKinds().size());
}

TEST(OpSemanticsDispatch, ErrorsStartWithTheKindName) {
  for (OpKind kind : allOpKinds()) {
    auto outputs = inferOutputTypes(kind, {}, {});
    ASSERT_FALSE(outputs.ok()) << opKindName(kind);
    EXPECT_EQ(outputs.error().message.rfind(std::string(opKindName(kind)) + ": ", 0), 0u)
        << outputs.error().message;
  }
  EXPECT_EQ(inferError(OpKind::kMatMul, {}, {}), "MatMul: expected 2 inputs, got 0");
  EXPECT_EQ(inferError(OpKind::kReLU, {}, {type({2}), type({2})}), "ReLU: expected 1 input, got 2");
}

// ---- matmul ----

TEST(MatMulSemantics, TwoDimensional) {
  auto op = semantics(OpKind::kMatMul, {}, {type({32, 784}), type({784, 512})});
  EXPECT_EQ(op.output, type({32, 512}));
  EXPECT_EQ(op.flops, 2.0 * 32 * 784 * 512);
  EXPECT_EQ(op.flops, 25690112);
  EXPECT_EQ(op.bytes, (32 * 784 + 784 * 512 + 32 * 512) * 4);
  EXPECT_EQ(op.backward.flops, 51380224);
  EXPECT_EQ(savedToString(op.backward), "in0 in1");
}

TEST(MatMulSemantics, LeadingDimsOfAAreBatch) {
  auto op = semantics(OpKind::kMatMul, {}, {type({4, 8, 16}, DType::kBF16), type({16, 32})});
  EXPECT_EQ(op.output, type({4, 8, 32}, DType::kBF16));  // A's dtype
  EXPECT_EQ(op.flops, 2.0 * 4 * 8 * 16 * 32);
}

TEST(MatMulSemantics, TransposeFlags) {
  OpAttrs attrs;
  attrs.transposeA = true;  // A [k=16, m=8]
  attrs.transposeB = true;  // B [n=32, k=16]
  auto op = semantics(OpKind::kMatMul, attrs, {type({16, 8}), type({32, 16})});
  EXPECT_EQ(op.output, type({8, 32}));
  EXPECT_EQ(op.flops, 8192);  // 2 * 8 * 16 * 32
}

TEST(MatMulSemantics, Errors) {
  EXPECT_EQ(inferError(OpKind::kMatMul, {}, {type({8, 32}), type({64, 16})}),
            "MatMul: inputs[1] dim 0 is 64 but inputs[0] contracts over 32");
  OpAttrs transposeB;
  transposeB.transposeB = true;
  EXPECT_EQ(inferError(OpKind::kMatMul, transposeB, {type({8, 32}), type({16, 64})}),
            "MatMul: inputs[1] dim 1 is 64 but inputs[0] contracts over 32");
  EXPECT_EQ(inferError(OpKind::kMatMul, {}, {type({8, 32}), type({2, 32, 16})}),
            "MatMul: inputs[1] must be rank 2, got rank 3");
  EXPECT_EQ(inferError(OpKind::kMatMul, {}, {type({32}), type({32, 16})}),
            "MatMul: inputs[0] must have rank >= 2, got rank 1");
  EXPECT_EQ(inferError(OpKind::kMatMul, {}, {type({8, 32})}), "MatMul: expected 2 inputs, got 1");
}

TEST(BatchMatMulSemantics, MatchingBatchDims) {
  auto op = semantics(OpKind::kBatchMatMul, {}, {type({2, 4, 8, 16}), type({2, 4, 16, 32})});
  EXPECT_EQ(op.output, type({2, 4, 8, 32}));
  EXPECT_EQ(op.flops, 65536);  // 2 * (2*4) * 8 * 16 * 32
  EXPECT_EQ(op.backward.flops, 131072);
  EXPECT_EQ(savedToString(op.backward), "in0 in1");
}

TEST(BatchMatMulSemantics, Errors) {
  EXPECT_EQ(inferError(OpKind::kBatchMatMul, {}, {type({2, 8, 16}), type({16, 32})}),
            "BatchMatMul: inputs[1] must have rank >= 3, got rank 2");
  EXPECT_EQ(inferError(OpKind::kBatchMatMul, {}, {type({8, 16}), type({2, 16, 32})}),
            "BatchMatMul: inputs[0] must have rank >= 3, got rank 2");
  EXPECT_EQ(inferError(OpKind::kBatchMatMul, {}, {type({2, 8, 16}), type({3, 16, 32})}),
            "BatchMatMul: inputs[1] batch dims [3] differ from the last of inputs[0]'s [2]");
  EXPECT_EQ(inferError(OpKind::kBatchMatMul, {}, {type({2, 4, 8, 16}), type({2, 16, 32})}),
            "BatchMatMul: inputs[1] batch dims [2] differ from the last of inputs[0]'s [2,4]");
  EXPECT_EQ(inferError(OpKind::kBatchMatMul, {}, {type({4, 8, 16}), type({2, 4, 16, 32})}),
            "BatchMatMul: inputs[1] batch dims [2,4] differ from the last of inputs[0]'s [4]");
  EXPECT_EQ(inferError(OpKind::kBatchMatMul, {}, {type({2, 8, 16}), type({2, 8, 32})}),
            "BatchMatMul: inputs[1] dim 1 is 8 but inputs[0] contracts over 16");
}

// The experts' weights [E, k, n] against tokens [b, E, m, k]: A's leading b is broadcast over
// B, as torch.matmul does.
TEST(BatchMatMulSemantics, BroadcastsLeadingDimsOfA) {
  auto op = semantics(OpKind::kBatchMatMul, {}, {type({2, 4, 8, 16}), type({4, 16, 32})});
  EXPECT_EQ(op.output, type({2, 4, 8, 32}));
  EXPECT_EQ(op.flops, 65536);  // 2 * (2*4) * 8 * 16 * 32, as with B repeated over b
  EXPECT_EQ(op.backward.flops, 131072);
}

// ---- elementwise binary ----

TEST(ElementwiseBinarySemantics, NumpyBroadcasting) {
  auto op = semantics(OpKind::kAdd, {}, {type({8, 1, 4}), type({3, 1})});
  EXPECT_EQ(op.output, type({8, 3, 4}));
  EXPECT_EQ(op.flops, 96);
  EXPECT_EQ(op.bytes, (32 + 3 + 96) * 4);
  EXPECT_EQ(semantics(OpKind::kMul, {}, {type({}), type({2, 3})}).output, type({2, 3}));
  EXPECT_EQ(semantics(OpKind::kSub, {}, {type({5, 1}), type({5, 7})}).output, type({5, 7}));
}

TEST(ElementwiseBinarySemantics, BackwardPerKind) {
  const std::vector<TensorType> inputs{type({4, 8}), type({4, 8})};
  auto add = semantics(OpKind::kAdd, {}, inputs);
  EXPECT_EQ(add.backward.flops, 32);
  EXPECT_EQ(savedToString(add.backward), "");
  auto sub = semantics(OpKind::kSub, {}, inputs);
  EXPECT_EQ(sub.backward.flops, 32);
  EXPECT_EQ(savedToString(sub.backward), "");
  auto mul = semantics(OpKind::kMul, {}, inputs);
  EXPECT_EQ(mul.backward.flops, 64);
  EXPECT_EQ(savedToString(mul.backward), "in0 in1");
  auto div = semantics(OpKind::kDiv, {}, inputs);
  EXPECT_EQ(div.flops, 32);
  EXPECT_EQ(div.backward.flops, 96);
  EXPECT_EQ(savedToString(div.backward), "in0 in1 out0");
}

TEST(ElementwiseBinarySemantics, Errors) {
  EXPECT_EQ(inferError(OpKind::kAdd, {}, {type({2, 3}), type({4})}),
            "Add: inputs[0] dim 1 (size 3) and inputs[1] dim 0 (size 4) cannot broadcast");
  EXPECT_EQ(inferError(OpKind::kMul, {}, {type({2, 3}), type({2, 3}, DType::kBF16)}),
            "Mul: inputs[1] dtype bf16 differs from inputs[0] dtype fp32");
  EXPECT_EQ(inferError(OpKind::kDiv, {}, {type({2, 3})}), "Div: expected 2 inputs, got 1");
}

// ---- elementwise unary ----

struct UnaryExpectation {
  OpKind kind;
  double forwardPerElement;
  double backwardPerElement;
  std::string saved;
};

TEST(ElementwiseUnarySemantics, PerElementCostsAndSavedTensors) {
  const std::vector<UnaryExpectation> expectations = {
      {OpKind::kReLU, 1, 1, "out0"},    {OpKind::kGeLU, 8, 16, "in0"},
      {OpKind::kSiLU, 5, 9, "in0"},     {OpKind::kTanh, 1, 3, "out0"},
      {OpKind::kSigmoid, 4, 3, "out0"}, {OpKind::kExp, 1, 1, "out0"},
      {OpKind::kNeg, 1, 1, ""},         {OpKind::kSqrt, 1, 2, "out0"},
      {OpKind::kCast, 0, 0, ""},        {OpKind::kDropout, 2, 2, "extra:32"},
  };
  const TensorType input = type({4, 8}, DType::kBF16);  // 32 elements
  for (const auto& expected : expectations) {
    SCOPED_TRACE(std::string(opKindName(expected.kind)));
    auto op = semantics(expected.kind, {}, {input});
    EXPECT_EQ(op.flops, 32 * expected.forwardPerElement);
    EXPECT_EQ(op.backward.flops, 32 * expected.backwardPerElement);
    EXPECT_EQ(savedToString(op.backward), expected.saved);
  }
}

TEST(ElementwiseUnarySemantics, OutputTypes) {
  EXPECT_EQ(semantics(OpKind::kGeLU, {}, {type({3, 5}, DType::kBF16)}).output,
            type({3, 5}, DType::kBF16));
  OpAttrs cast;
  cast.castTo = DType::kF32;
  auto op = semantics(OpKind::kCast, cast, {type({4, 8}, DType::kBF16)});
  EXPECT_EQ(op.output, type({4, 8}, DType::kF32));
  EXPECT_EQ(op.bytes, 32 * 2 + 32 * 4);
}

TEST(ElementwiseUnarySemantics, DropoutWritesItsMask) {
  OpAttrs attrs;
  attrs.dropoutRate = 0.1;
  auto op = semantics(OpKind::kDropout, attrs, {type({4, 8}, DType::kBF16)});
  EXPECT_EQ(op.bytes, 64 + 64 + 32);  // input, output, 1-byte mask
  EXPECT_EQ(semantics(OpKind::kReLU, {}, {type({4, 8}, DType::kBF16)}).bytes, 128);
}

TEST(ElementwiseUnarySemantics, DropoutRateMustBeBelowOne) {
  OpAttrs attrs;
  attrs.dropoutRate = 1;
  EXPECT_EQ(inferError(OpKind::kDropout, attrs, {type({4})}),
            "Dropout: attrs.dropoutRate is 1, expected a value in [0, 1)");
  attrs.dropoutRate = -0.5;
  EXPECT_EQ(inferError(OpKind::kDropout, attrs, {type({4})}),
            "Dropout: attrs.dropoutRate is -0.5, expected a value in [0, 1)");
  attrs.dropoutRate = 0;
  EXPECT_EQ(inferError(OpKind::kDropout, attrs, {type({4})}), "<no error>");
}

// ---- softmax ----

TEST(SoftmaxSemantics, LastAxisByDefault) {
  auto op = semantics(OpKind::kSoftmax, {}, {type({2, 3, 4}, DType::kF16)});
  EXPECT_EQ(op.output, type({2, 3, 4}, DType::kF16));
  EXPECT_EQ(op.flops, 120);          // 5 per element
  EXPECT_EQ(op.backward.flops, 96);  // 4 per element
  EXPECT_EQ(savedToString(op.backward), "out0");
}

TEST(SoftmaxSemantics, AxisRange) {
  OpAttrs attrs;
  attrs.axis = -3;
  EXPECT_EQ(inferError(OpKind::kSoftmax, attrs, {type({2, 3, 4})}), "<no error>");
  attrs.axis = 3;
  EXPECT_EQ(inferError(OpKind::kSoftmax, attrs, {type({2, 3, 4})}),
            "Softmax: attrs.axis is 3, expected a value in [-3, 2]");
  attrs.axis = -4;
  EXPECT_EQ(inferError(OpKind::kSoftmax, attrs, {type({2, 3, 4})}),
            "Softmax: attrs.axis is -4, expected a value in [-3, 2]");
  EXPECT_EQ(inferError(OpKind::kSoftmax, {}, {type({})}),
            "Softmax: attrs.axis is -1, but inputs[0] is a scalar");
}

// ---- norm ----

TEST(NormSemantics, LayerNorm) {
  // 8 rows of h = 8; fp32 weights beside fp16 activations.
  auto op = semantics(OpKind::kLayerNorm, {}, {type({2, 4, 8}, DType::kF16), type({8}), type({8})});
  EXPECT_EQ(op.output, type({2, 4, 8}, DType::kF16));
  EXPECT_EQ(op.flops, 448);                               // 7 per element
  EXPECT_EQ(op.backward.flops, 832);                      // 13 per element
  EXPECT_EQ(savedToString(op.backward), "in0 extra:64");  // mean + rstd, 8 bytes per row
  EXPECT_EQ(op.bytes, 128 + 32 + 32 + 128 + 64);
}

TEST(NormSemantics, RMSNorm) {
  auto op = semantics(OpKind::kRMSNorm, {}, {type({2, 4, 8}, DType::kBF16), type({8})});
  EXPECT_EQ(op.output, type({2, 4, 8}, DType::kBF16));
  EXPECT_EQ(op.flops, 256);                               // 4 per element
  EXPECT_EQ(op.backward.flops, 576);                      // 9 per element
  EXPECT_EQ(savedToString(op.backward), "in0 extra:32");  // rstd, 4 bytes per row
}

TEST(NormSemantics, Errors) {
  const TensorType x = type({2, 4, 8});
  EXPECT_EQ(inferError(OpKind::kLayerNorm, {}, {x, type({4}), type({8})}),
            "LayerNorm: inputs[1] shape [4] differs from [8] (the last dim of inputs[0])");
  EXPECT_EQ(inferError(OpKind::kLayerNorm, {}, {x, type({8}), type({8, 1})}),
            "LayerNorm: inputs[2] shape [8,1] differs from [8] (the last dim of inputs[0])");
  EXPECT_EQ(inferError(OpKind::kLayerNorm, {}, {x, type({8})}),
            "LayerNorm: expected 3 inputs, got 2");
  EXPECT_EQ(inferError(OpKind::kRMSNorm, {}, {x, type({8}), type({8})}),
            "RMSNorm: expected 2 inputs, got 3");
  EXPECT_EQ(inferError(OpKind::kRMSNorm, {}, {type({}), type({1})}),
            "RMSNorm: inputs[0] must have rank >= 1, got rank 0");
  OpAttrs attrs;
  attrs.epsilon = 0;
  EXPECT_EQ(inferError(OpKind::kRMSNorm, attrs, {x, type({8})}),
            "RMSNorm: attrs.epsilon is 0, expected a positive value");
}

// ---- reduce ----

OpAttrs reduceAxes(std::vector<int64_t> axes, bool keepDims = false) {
  OpAttrs attrs;
  attrs.axes = std::move(axes);
  attrs.keepDims = keepDims;
  return attrs;
}

TEST(ReduceSemantics, OutputShapes) {
  const std::vector<TensorType> x{type({2, 3, 4})};
  EXPECT_EQ(semantics(OpKind::kReduceSum, reduceAxes({-1}), x).output, type({2, 3}));
  EXPECT_EQ(semantics(OpKind::kReduceSum, reduceAxes({1}, true), x).output, type({2, 1, 4}));
  EXPECT_EQ(semantics(OpKind::kReduceMean, reduceAxes({0, 2}), x).output, type({3}));
  EXPECT_EQ(semantics(OpKind::kReduceMax, reduceAxes({}), x).output, type({}));
  EXPECT_EQ(semantics(OpKind::kReduceMax, reduceAxes({}, true), x).output, type({1, 1, 1}));
}

TEST(ReduceSemantics, CostsPerKind) {
  const std::vector<TensorType> x{type({2, 3, 4})};  // 24 elements
  auto sum = semantics(OpKind::kReduceSum, reduceAxes({-1}), x);
  EXPECT_EQ(sum.flops, 24);
  EXPECT_EQ(sum.backward.flops, 24);
  EXPECT_EQ(savedToString(sum.backward), "");
  EXPECT_EQ(sum.bytes, (24 + 6) * 4);
  auto mean = semantics(OpKind::kReduceMean, reduceAxes({0, 2}), x);
  EXPECT_EQ(mean.flops, 27);  // 24 adds + 3 divides
  EXPECT_EQ(mean.backward.flops, 24);
  EXPECT_EQ(savedToString(mean.backward), "");
  auto max = semantics(OpKind::kReduceMax, reduceAxes({1}), x);
  EXPECT_EQ(max.flops, 24);
  EXPECT_EQ(max.backward.flops, 48);
  EXPECT_EQ(savedToString(max.backward), "in0 out0");
}

TEST(ReduceSemantics, Errors) {
  EXPECT_EQ(inferError(OpKind::kReduceSum, reduceAxes({0, 3}), {type({2, 3, 4})}),
            "ReduceSum: attrs.axes[1] is 3, expected a value in [-3, 2]");
  EXPECT_EQ(inferError(OpKind::kReduceMean, reduceAxes({1, -2}), {type({2, 3, 4})}),
            "ReduceMean: attrs.axes lists dim 1 twice");
  EXPECT_EQ(inferError(OpKind::kReduceMax, reduceAxes({0}), {type({})}),
            "ReduceMax: attrs.axes[0] is 0, but inputs[0] is a scalar");
}

}  // namespace
}  // namespace autopar::ir
