// Shape inference and costs of the fused transformer ops: FlashAttention, Rotary, CrossEntropy,
// and the mixture-of-experts token movement (MoEDispatch, MoECombine).

#include <gtest/gtest.h>

#include "ir/op_semantics.h"
#include "ir/op_semantics_test_util.h"

namespace autopar::ir {
namespace {

using testing::inferError;
using testing::savedToString;
using testing::semantics;
using testing::type;

OpAttrs heads(int64_t numHeads, int64_t numKvHeads = 0, bool causal = true) {
  OpAttrs attrs;
  attrs.numHeads = numHeads;
  attrs.numKvHeads = numKvHeads;
  attrs.causal = causal;
  return attrs;
}

// ---- FlashAttention ----

// b = 2, s = 128, skv = 256, hq = 8, hk = 2, d = 64, bf16.
std::vector<TensorType> groupedQueryInputs() {
  return {type({2, 128, 512}, DType::kBF16), type({2, 256, 128}, DType::kBF16),
          type({2, 256, 128}, DType::kBF16)};
}

TEST(FlashAttentionSemantics, GroupedQueryAttention) {
  auto op = semantics(OpKind::kFlashAttention, heads(8, 2, false), groupedQueryInputs());
  EXPECT_EQ(op.output, type({2, 128, 512}, DType::kBF16));
  EXPECT_EQ(op.flops, 134217728);           // 4 * b * s * skv * hq * d
  EXPECT_EQ(op.backward.flops, 335544320);  // 2.5x forward
  // q, k, v, output, and an fp32 log-sum-exp per (batch, head, query): 2 * 8 * 128 * 4 bytes.
  EXPECT_EQ(savedToString(op.backward), "in0 in1 in2 out0 extra:8192");
  // q 262144 + k 131072 + v 131072 + output 262144 + log-sum-exp 8192.
  EXPECT_EQ(op.bytes, 794624);
}

TEST(FlashAttentionSemantics, CausalHalvesTheFlops) {
  auto op = semantics(OpKind::kFlashAttention, heads(8, 2, true), groupedQueryInputs());
  EXPECT_EQ(op.flops, 67108864);
  EXPECT_EQ(op.backward.flops, 167772160);
}

TEST(FlashAttentionSemantics, ScoresInMemoryComputeTheWholeMatrixAndKeepIt) {
  OpAttrs attrs = heads(8, 2, true);
  attrs.scoresInMemory = true;
  auto op = semantics(OpKind::kFlashAttention, attrs, groupedQueryInputs());
  // The mask is applied after the scores are computed: no causal saving. Backward runs four
  // matmuls on the kept probabilities (2x forward) instead of recomputing them.
  EXPECT_EQ(op.flops, 134217728);
  EXPECT_EQ(op.backward.flops, 268435456);
  // 2 x 8 x 128 x 256 = 524288 score elements: P, P' (2 bytes each) and the dropout mask
  // (1 byte) kept, Korthikanti et al.'s 5 bytes per element.
  EXPECT_EQ(savedToString(op.backward), "in0 in1 in2 extra:2621440");
  // q, k, v and output (786432) plus 13 bytes per score element: S written, read by the
  // softmax, P written, read by dropout, P' and its mask written, P' read.
  EXPECT_EQ(op.bytes, 786432 + 13 * 524288);
}

TEST(FlashAttentionSemantics, KvHeadsDefaultToQueryHeads) {
  const TensorType x = type({1, 16, 256});
  EXPECT_EQ(semantics(OpKind::kFlashAttention, heads(4), {x, x, x}).output, x);
  EXPECT_EQ(inferError(OpKind::kFlashAttention, heads(4), {x, type({1, 16, 64}), x}),
            "FlashAttention: inputs[1] dim 2 is 64, expected 256 (numKvHeads 4 x head dim 64)");
}

TEST(FlashAttentionSemantics, HeadAttributeErrors) {
  const auto inputs = groupedQueryInputs();
  EXPECT_EQ(inferError(OpKind::kFlashAttention, heads(0), inputs),
            "FlashAttention: attrs.numHeads is 0, expected a positive count");
  EXPECT_EQ(inferError(OpKind::kFlashAttention, heads(8, -1), inputs),
            "FlashAttention: attrs.numKvHeads is -1, expected 0 (same as attrs.numHeads) or a "
            "positive count");
  EXPECT_EQ(inferError(OpKind::kFlashAttention, heads(8, 3), inputs),
            "FlashAttention: attrs.numHeads 8 is not divisible by attrs.numKvHeads 3");
  EXPECT_EQ(inferError(OpKind::kFlashAttention, heads(3, 1), inputs),
            "FlashAttention: inputs[0] dim 2 is 512, not divisible by attrs.numHeads 3");
}

TEST(FlashAttentionSemantics, InputShapeErrors) {
  const TensorType q = type({2, 128, 512}, DType::kBF16);
  const TensorType kv = type({2, 256, 128}, DType::kBF16);
  const OpAttrs attrs = heads(8, 2);
  EXPECT_EQ(inferError(OpKind::kFlashAttention, attrs, {q, kv}),
            "FlashAttention: expected 3 inputs, got 2");
  EXPECT_EQ(inferError(OpKind::kFlashAttention, attrs, {q, type({2, 256, 2, 64}), kv}),
            "FlashAttention: inputs[1] must be rank 3, got rank 4");
  EXPECT_EQ(inferError(OpKind::kFlashAttention, attrs, {q, kv, type({2, 256, 256}, DType::kBF16)}),
            "FlashAttention: inputs[2] dim 2 is 256, expected 128 (numKvHeads 2 x head dim 64)");
  EXPECT_EQ(inferError(OpKind::kFlashAttention, attrs, {q, type({3, 256, 128}, DType::kBF16), kv}),
            "FlashAttention: inputs[1] dim 0 is 3 but inputs[0] dim 0 is 2");
  EXPECT_EQ(inferError(OpKind::kFlashAttention, attrs, {q, kv, type({2, 100, 128}, DType::kBF16)}),
            "FlashAttention: inputs[2] dim 1 is 100 but inputs[1] dim 1 is 256");
  EXPECT_EQ(inferError(OpKind::kFlashAttention, attrs, {q, kv, type({2, 256, 128})}),
            "FlashAttention: inputs[2] dtype fp32 differs from inputs[0] dtype bf16");
}

// ---- Rotary ----

TEST(RotarySemantics, SameTypeThreeFlopsPerElement) {
  auto op = semantics(OpKind::kRotary, heads(8), {type({2, 16, 512}, DType::kBF16)});
  EXPECT_EQ(op.output, type({2, 16, 512}, DType::kBF16));
  EXPECT_EQ(op.flops, 49152);  // 3 * 16384
  EXPECT_EQ(op.backward.flops, 49152);
  EXPECT_EQ(savedToString(op.backward), "");
  EXPECT_EQ(op.bytes, 2 * 16384 * 2);
  EXPECT_EQ(op.backward.bytes, 2 * 16384 * 2);  // the gradient read and written once
}

TEST(RotarySemantics, Errors) {
  EXPECT_EQ(inferError(OpKind::kRotary, heads(0), {type({2, 16, 512})}),
            "Rotary: attrs.numHeads is 0, expected a positive count");
  EXPECT_EQ(inferError(OpKind::kRotary, heads(3), {type({2, 16, 512})}),
            "Rotary: inputs[0] dim 2 is 512, not divisible by attrs.numHeads 3");
  EXPECT_EQ(inferError(OpKind::kRotary, heads(8), {type({2, 16, 24})}),
            "Rotary: head dim 3 (inputs[0] dim 2 / attrs.numHeads) must be even");
  EXPECT_EQ(inferError(OpKind::kRotary, heads(8), {type({16, 512})}),
            "Rotary: inputs[0] must be rank 3, got rank 2");
}

// ---- CrossEntropy ----

TEST(CrossEntropySemantics, ScalarFp32Loss) {
  auto op = semantics(OpKind::kCrossEntropy, {},
                      {type({4, 8, 100}, DType::kBF16), type({4, 8}, DType::kI64)});
  EXPECT_EQ(op.output, type({}, DType::kF32));
  EXPECT_EQ(op.flops, 16000);          // 5 per logit
  EXPECT_EQ(op.backward.flops, 6400);  // 2 per logit
  EXPECT_EQ(savedToString(op.backward), "in0 in1");
  // Per bf16 logit: the upcast (2 + 4) and log_softmax's fp32 passes (16) forward; the fp32
  // gradient, log_softmax's backward (4 + 12) and the cast back (4 + 2) backward. Then the
  // labels and the fp32 loss.
  EXPECT_EQ(op.bytes, 3200 * 22 + 256 + 4);
  EXPECT_EQ(op.backward.bytes, 3200 * 22 + 256);
  // fp32 logits need no upcast.
  auto fp32 = semantics(OpKind::kCrossEntropy, {}, {type({4, 8, 100}), type({4, 8}, DType::kI64)});
  EXPECT_EQ(fp32.bytes, 3200 * 16 + 256 + 4);
  EXPECT_EQ(fp32.backward.bytes, 3200 * 16 + 256);
  EXPECT_EQ(semantics(OpKind::kCrossEntropy, {}, {type({50}), type({}, DType::kI32)}).output,
            type({}, DType::kF32));
}

// flash-attn's fused kernel (OpAttrs::fusedLoss) keeps the bf16 logits themselves, not an fp32
// softmax, and reads each logit once forward and twice backward (the logit and its gradient).
TEST(CrossEntropySemantics, FusedLossKeepsTheLogitsInTheirDtype) {
  OpAttrs fused;
  fused.fusedLoss = true;
  auto op = semantics(OpKind::kCrossEntropy, fused,
                      {type({4, 8, 100}, DType::kBF16), type({4, 8}, DType::kI64)});
  ASSERT_EQ(op.backward.saved.size(), 2u);
  EXPECT_FALSE(op.backward.saved[0].keptAs.has_value());
  EXPECT_EQ(op.bytes, 3200 * 2 + 256 + 4);
  EXPECT_EQ(op.backward.bytes, 3200 * 4 + 256);
  auto fp32 = semantics(OpKind::kCrossEntropy, {},
                        {type({4, 8, 100}, DType::kBF16), type({4, 8}, DType::kI64)});
  EXPECT_EQ(fp32.backward.saved[0].keptAs, DType::kF32);
}

// A chunked loss (OpAttrs::lossChunks: torchtitan's ChunkedLossWrapper) takes each chunk's
// gradient before the next: the backward keeps the labels alone, and moves what the fp32 loss
// moves over all the chunks together.
TEST(CrossEntropySemantics, ChunkedLossKeepsOnlyTheLabels) {
  OpAttrs chunked;
  chunked.lossChunks = 8;
  auto op = semantics(OpKind::kCrossEntropy, chunked,
                      {type({4, 8, 100}, DType::kBF16), type({4, 8}, DType::kI64)});
  ASSERT_EQ(op.backward.saved.size(), 1u);
  EXPECT_EQ(op.backward.saved[0].source, SavedTensor::Source::kInput);
  EXPECT_EQ(op.backward.saved[0].index, 1);
  auto whole = semantics(OpKind::kCrossEntropy, {},
                         {type({4, 8, 100}, DType::kBF16), type({4, 8}, DType::kI64)});
  EXPECT_EQ(op.bytes, whole.bytes);
  EXPECT_EQ(op.backward.bytes, whole.backward.bytes);
  EXPECT_EQ(op.backward.flops, whole.backward.flops);
}

TEST(CrossEntropySemantics, Errors) {
  EXPECT_EQ(inferError(OpKind::kCrossEntropy, {}, {type({4, 8, 100}), type({4}, DType::kI64)}),
            "CrossEntropy: inputs[1] shape [4] differs from [4,8] (the leading dims of inputs[0])");
  EXPECT_EQ(inferError(OpKind::kCrossEntropy, {}, {type({4, 100}), type({4})}),
            "CrossEntropy: inputs[1] dtype fp32, expected an integer type (int64, int32 or int8)");
  EXPECT_EQ(
      inferError(OpKind::kCrossEntropy, {}, {type({4, 100}, DType::kI32), type({4}, DType::kI32)}),
      "CrossEntropy: inputs[0] dtype int32, expected a floating type (fp32, bf16, fp16 or "
      "fp8)");
  EXPECT_EQ(inferError(OpKind::kCrossEntropy, {}, {type({}), type({}, DType::kI32)}),
            "CrossEntropy: inputs[0] must have rank >= 1, got rank 0");
}

// ---- MoEDispatch and MoECombine ----

OpAttrs topK(int64_t k) {
  OpAttrs attrs;
  attrs.topK = k;
  return attrs;
}

// b = 2, s = 16, h = 8, E = 4 experts, top 2: each expert gets 16 * 2 / 4 = 8 slots per sample.
TEST(MoEDispatchSemantics, SlotsPerExpertFollowTopK) {
  auto op = semantics(OpKind::kMoEDispatch, topK(2),
                      {type({2, 16, 8}, DType::kBF16), type({2, 16, 4}, DType::kBF16)});
  EXPECT_EQ(op.output, type({2, 4, 8, 8}, DType::kBF16));
  EXPECT_EQ(op.flops, 256);  // top 2 of 4: 2 passes over the 2 * 16 * 4 logits
  // Every token copied twice: as many output elements as topK x the input's.
  EXPECT_EQ(op.backward.flops, 512);
  EXPECT_EQ(savedToString(op.backward), "extra:256");  // 32 tokens x 2 int32 slots
  // x 512 + logits 256 + output 1024 bytes.
  EXPECT_EQ(op.bytes, 1792);
  auto topOne = semantics(OpKind::kMoEDispatch, topK(1),
                          {type({2, 16, 8}, DType::kBF16), type({2, 16, 4}, DType::kBF16)});
  EXPECT_EQ(topOne.output, type({2, 4, 4, 8}, DType::kBF16));
}

TEST(MoECombineSemantics, WeightedSumOfTheExpertOutputs) {
  auto op = semantics(OpKind::kMoECombine, topK(2), {type({2, 4, 8, 8}), type({2, 16, 4})});
  EXPECT_EQ(op.output, type({2, 16, 8}));
  // A multiply-add per routed element, 3 per choice for the softmax over the 2 x 16 x 2 chosen.
  EXPECT_EQ(op.flops, 1024 + 192);
  // Per element a scale and a dot product for the weights; 2 per choice through the softmax.
  EXPECT_EQ(op.backward.flops, 1536 + 128);
  EXPECT_EQ(savedToString(op.backward), "in0 in1");
}

TEST(MoESemantics, Errors) {
  const std::vector<TensorType> dispatch{type({2, 16, 8}), type({2, 16, 4})};
  EXPECT_EQ(inferError(OpKind::kMoEDispatch, topK(0), dispatch),
            "MoEDispatch: attrs.topK is 0, expected 1 to the 4 experts (inputs[1] dim 2)");
  EXPECT_EQ(inferError(OpKind::kMoEDispatch, topK(5), dispatch),
            "MoEDispatch: attrs.topK is 5, expected 1 to the 4 experts (inputs[1] dim 2)");
  EXPECT_EQ(inferError(OpKind::kMoEDispatch, topK(1), {type({2, 6, 8}), type({2, 6, 4})}),
            "MoEDispatch: inputs[0] dim 1 is 6: 6 tokens x topK 1 do not spread evenly over 4 "
            "experts");
  EXPECT_EQ(inferError(OpKind::kMoEDispatch, topK(2), {type({2, 16, 8}), type({2, 8, 4})}),
            "MoEDispatch: inputs[1] tokens [2,8] differ from inputs[0] tokens [2,16]");
  EXPECT_EQ(inferError(OpKind::kMoECombine, topK(2), {type({2, 4, 4, 8}), type({2, 16, 4})}),
            "MoECombine: inputs[0] shape [2,4,4,8] is not [b, E, s * topK / E, h] for inputs[1] "
            "[b, s, E] = [2,16,4] and topK 2");
  EXPECT_EQ(
      inferError(OpKind::kMoECombine, topK(2), {type({2, 4, 8, 8}), type({2, 16, 4}, DType::kI32)}),
      "MoECombine: inputs[1] dtype int32, expected a floating type (fp32, bf16, fp16 or fp8)");
}

}  // namespace
}  // namespace autopar::ir
