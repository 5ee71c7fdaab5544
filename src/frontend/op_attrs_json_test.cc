#include "frontend/op_attrs_json.h"

#include <gtest/gtest.h>

namespace autopar::frontend {
namespace {

using nlohmann::json;

std::string errorOf(ir::OpKind kind, const char* attrs) {
  auto parsed = attrsFromJson(kind, json::parse(attrs), "ops[0].attrs");
  return parsed ? "<ok>" : parsed.error().message;
}

TEST(OpAttrsJson, EveryAttributeRoundTrips) {
  struct Case {
    ir::OpKind kind;
    const char* attrs;
  };
  const Case cases[] = {
      {ir::OpKind::kMatMul, R"({"transpose_a": true, "transpose_b": true})"},
      {ir::OpKind::kBatchMatMul, R"({"transpose_b": true})"},
      {ir::OpKind::kReduceMax, R"({"axes": [0, -1], "keep_dims": true})"},
      {ir::OpKind::kTranspose, R"({"perm": [2, 0, 1]})"},
      {ir::OpKind::kReshape, R"({"new_shape": [6, -1]})"},
      {ir::OpKind::kSoftmax, R"({"axis": 1})"},
      {ir::OpKind::kConcat, R"({"axis": 0})"},
      {ir::OpKind::kSlice, R"({"starts": [1, 0], "ends": [3, 6]})"},
      {ir::OpKind::kFlashAttention, R"({"num_heads": 32, "num_kv_heads": 8, "causal": false})"},
      {ir::OpKind::kRotary, R"({"num_heads": 8})"},
      {ir::OpKind::kCast, R"({"cast_to": "bf16"})"},
      {ir::OpKind::kDropout, R"({"dropout_rate": 0.1})"},
      {ir::OpKind::kLayerNorm, R"({"epsilon": 1e-06})"},
  };
  for (const auto& testCase : cases) {
    const json written = json::parse(testCase.attrs);
    auto attrs = attrsFromJson(testCase.kind, written, "attrs");
    ASSERT_TRUE(attrs) << attrs.error().message;
    EXPECT_EQ(attrsToJson(testCase.kind, *attrs), written) << testCase.attrs;
  }
}

TEST(OpAttrsJson, DefaultsAreNotWritten) {
  ir::OpAttrs attrs;
  attrs.epsilon = 1e-5;     // the default
  attrs.transposeB = true;  // not read by RMSNorm
  EXPECT_EQ(attrsToJson(ir::OpKind::kRMSNorm, attrs), json::object());
  EXPECT_EQ(attrsToJson(ir::OpKind::kMatMul, attrs), json::parse(R"({"transpose_b": true})"));
}

TEST(OpAttrsJson, KeysPerKind) {
  EXPECT_EQ(
      attrKeysOf(ir::OpKind::kFlashAttention),
      (std::vector<std::string_view>{"num_heads", "num_kv_heads", "causal", "scores_in_memory"}));
  EXPECT_EQ(attrKeysOf(ir::OpKind::kGather), (std::vector<std::string_view>{"manual_split"}));
  EXPECT_TRUE(attrKeysOf(ir::OpKind::kCrossEntropy).empty());
  EXPECT_EQ(attrKeysOf(ir::OpKind::kMoEDispatch), (std::vector<std::string_view>{"top_k"}));
  ir::OpAttrs attrs;
  attrs.topK = 2;
  EXPECT_EQ(attrsToJson(ir::OpKind::kMoECombine, attrs), json::parse(R"({"top_k": 2})"));
}

TEST(OpAttrsJson, ValueErrors) {
  EXPECT_EQ(errorOf(ir::OpKind::kFlashAttention, R"({"num_heads": 0})"),
            "ops[0].attrs.num_heads: expected a positive integer, got 0");
  EXPECT_EQ(errorOf(ir::OpKind::kDropout, R"({"dropout_rate": 1.0})"),
            "ops[0].attrs.dropout_rate: expected a rate in [0, 1), got 1.0");
  EXPECT_EQ(errorOf(ir::OpKind::kRMSNorm, R"({"epsilon": 0})"),
            "ops[0].attrs.epsilon: expected a positive number, got 0");
  EXPECT_EQ(errorOf(ir::OpKind::kRMSNorm, R"({"epsilon": "small"})"),
            "ops[0].attrs.epsilon: expected a number, got string");
  EXPECT_EQ(errorOf(ir::OpKind::kCast, R"({"cast_to": "double"})"),
            "ops[0].attrs.cast_to: unknown dtype 'double', expected one of fp32, bf16, fp16, fp8, "
            "int64, int32, int8, bool");
  EXPECT_EQ(errorOf(ir::OpKind::kTranspose, R"({"perm": [1, "0"]})"),
            "ops[0].attrs.perm[1]: expected an integer, got string");
  EXPECT_EQ(errorOf(ir::OpKind::kReLU, R"({"axis": 0})"),
            "ops[0].attrs: ReLU does not take attribute 'axis' (ReLU takes no attributes)");
}

}  // namespace
}  // namespace autopar::frontend
