// Names and sizes of dtypes and op kinds, and the shape helpers of tensor.h.

#include <gtest/gtest.h>

#include "ir/dtype.h"
#include "ir/op_kind.h"
#include "ir/tensor.h"

namespace autopar::ir {
namespace {

TEST(DType, BytesAndNames) {
  const std::vector<std::tuple<DType, int64_t, std::string_view, bool>> expected = {
      {DType::kF32, 4, "fp32", true},   {DType::kBF16, 2, "bf16", true},
      {DType::kF16, 2, "fp16", true},   {DType::kFP8, 1, "fp8", true},
      {DType::kI64, 8, "int64", false}, {DType::kI32, 4, "int32", false},
      {DType::kI8, 1, "int8", false},   {DType::kBool, 1, "bool", false},
  };
  for (const auto& [dtype, bytes, name, floating] : expected) {
    EXPECT_EQ(dtypeBytes(dtype), bytes) << name;
    EXPECT_EQ(dtypeName(dtype), name);
    EXPECT_EQ(isFloating(dtype), floating) << name;
    auto parsed = parseDType(name);
    ASSERT_TRUE(parsed.ok()) << name;
    EXPECT_EQ(*parsed, dtype);
  }
}

TEST(DType, ParsesLongFormAliases) {
  EXPECT_EQ(*parseDType("float32"), DType::kF32);
  EXPECT_EQ(*parseDType("float16"), DType::kF16);
  EXPECT_EQ(*parseDType("bfloat16"), DType::kBF16);
  EXPECT_EQ(*parseDType("float8"), DType::kFP8);
}

TEST(DType, UnknownNameListsTheCanonicalOnes) {
  auto parsed = parseDType("float64");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message,
            "unknown dtype 'float64', expected one of fp32, bf16, fp16, fp8, int64, int32, int8, "
            "bool");
  EXPECT_FALSE(parseDType("FP32").ok());
}

TEST(OpKind, NamesRoundTrip) {
  const std::vector<std::string_view> names = {
      "MatMul",     "BatchMatMul",  "Add",         "Sub",
      "Mul",        "Div",          "ReLU",        "GeLU",
      "SiLU",       "Tanh",         "Sigmoid",     "Exp",
      "Neg",        "Sqrt",         "Cast",        "Dropout",
      "Softmax",    "LayerNorm",    "RMSNorm",     "ReduceSum",
      "ReduceMean", "ReduceMax",    "Gather",      "Reshape",
      "Transpose",  "Concat",       "Slice",       "FlashAttention",
      "Rotary",     "CrossEntropy", "MoEDispatch", "MoECombine",
      "Opaque"};
  ASSERT_EQ(allOpKinds().size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const OpKind kind = allOpKinds()[i];
    EXPECT_EQ(static_cast<size_t>(kind), i);
    EXPECT_EQ(opKindName(kind), names[i]);
    auto parsed = parseOpKind(names[i]);
    ASSERT_TRUE(parsed.ok()) << names[i];
    EXPECT_EQ(*parsed, kind);
  }
}

TEST(OpKind, Families) {
  EXPECT_EQ(familyOf(OpKind::kMatMul), OpFamily::kMatMul);
  EXPECT_EQ(familyOf(OpKind::kBatchMatMul), OpFamily::kMatMul);
  EXPECT_EQ(familyOf(OpKind::kDiv), OpFamily::kElementwiseBinary);
  EXPECT_EQ(familyOf(OpKind::kCast), OpFamily::kElementwiseUnary);
  EXPECT_EQ(familyOf(OpKind::kDropout), OpFamily::kElementwiseUnary);
  EXPECT_EQ(familyOf(OpKind::kSoftmax), OpFamily::kSoftmax);
  EXPECT_EQ(familyOf(OpKind::kRMSNorm), OpFamily::kNorm);
  EXPECT_EQ(familyOf(OpKind::kReduceMax), OpFamily::kReduce);
  EXPECT_EQ(familyOf(OpKind::kGather), OpFamily::kGather);
  EXPECT_EQ(familyOf(OpKind::kReshape), OpFamily::kReshape);
  EXPECT_EQ(familyOf(OpKind::kTranspose), OpFamily::kTranspose);
  EXPECT_EQ(familyOf(OpKind::kConcat), OpFamily::kConcat);
  EXPECT_EQ(familyOf(OpKind::kSlice), OpFamily::kSlice);
  EXPECT_EQ(familyOf(OpKind::kFlashAttention), OpFamily::kAttention);
  EXPECT_EQ(familyOf(OpKind::kRotary), OpFamily::kRotary);
  EXPECT_EQ(familyOf(OpKind::kCrossEntropy), OpFamily::kCrossEntropy);
}

TEST(OpKind, ParseErrorsAreShort) {
  auto unknown = parseOpKind("Foo");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "unknown op kind 'Foo'");
  auto wrongCase = parseOpKind("matmul");
  ASSERT_FALSE(wrongCase.ok());
  EXPECT_EQ(wrongCase.error().message, "unknown op kind 'matmul' (did you mean 'MatMul'?)");
}

TEST(Tensor, NumElementsAndShapeToString) {
  EXPECT_EQ(numElements({2, 3, 4}), 24);
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(shapeToString({2, 3, 4}), "[2,3,4]");
  EXPECT_EQ(shapeToString({}), "[]");
  EXPECT_EQ(shapeToString({7}), "[7]");
  EXPECT_EQ((TensorType{{2, 3}, DType::kBF16}.bytes()), 12);
  EXPECT_EQ((TensorType{{}, DType::kI64}.bytes()), 8);
}

}  // namespace
}  // namespace autopar::ir
