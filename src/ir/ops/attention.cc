/// \file
/// FlashAttention and Rotary, the fused transformer ops. Heads are packed in the last dim.
///   FlashAttention q [b, s, hq*d], k [b, skv, hk*d], v [b, skv, hk*d] -> [b, s, hq*d]
///     attrs.numHeads = hq (> 0), attrs.numKvHeads = hk (0 means hq; hq % hk == 0 for GQA),
///     attrs.causal masks the upper triangle; attrs.scoresInMemory runs it unfused, as before
///     FlashAttention (the score matrix written, softmaxed, dropped out and read back).
///   Rotary x [b, s, h*d] -> same; rotates pairs inside each head, so d must be even.

#include <fmt/format.h>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

// The log-sum-exp of each query row, kept in fp32 for the backward pass (FlashAttention-2).
constexpr int64_t kLogSumExpBytes = 4;

// Head counts after applying the numKvHeads default, and the head dim.
struct AttentionHeads {
  int64_t queryHeads;
  int64_t kvHeads;
  int64_t headDim;
};

Expected<AttentionHeads> attentionHeads(const OpAttrs& attrs, const Shape& query) {
  if (auto status = expectPositive("attrs.numHeads", attrs.numHeads); !status) {
    return status.error();
  }
  if (attrs.numKvHeads < 0) {
    return Error{
        fmt::format("attrs.numKvHeads is {}, expected 0 (same as attrs.numHeads) or a "
                    "positive count",
                    attrs.numKvHeads)};
  }
  const int64_t kvHeads = attrs.numKvHeads == 0 ? attrs.numHeads : attrs.numKvHeads;
  if (attrs.numHeads % kvHeads != 0) {
    return Error{fmt::format("attrs.numHeads {} is not divisible by attrs.numKvHeads {}",
                             attrs.numHeads, kvHeads)};
  }
  if (query[2] % attrs.numHeads != 0) {
    return Error{fmt::format("inputs[0] dim 2 is {}, not divisible by attrs.numHeads {}", query[2],
                             attrs.numHeads)};
  }
  return AttentionHeads{attrs.numHeads, kvHeads, query[2] / attrs.numHeads};
}

// k (inputs[1]) and v (inputs[2]) against q and each other: batch, kv length and packed width.
Status checkKeysAndValues(std::span<const TensorType> inputs, const AttentionHeads& heads) {
  const int64_t kvWidth = heads.kvHeads * heads.headDim;
  for (size_t index = 1; index <= 2; ++index) {
    const Shape& shape = inputs[index].shape;
    if (auto status = expectSameDType(inputs, index, 0); !status) return status;
    if (shape[0] != inputs[0].shape[0]) {
      return Error{fmt::format("inputs[{}] dim 0 is {} but inputs[0] dim 0 is {}", index, shape[0],
                               inputs[0].shape[0])};
    }
    if (shape[2] != kvWidth) {
      return Error{fmt::format("inputs[{}] dim 2 is {}, expected {} (numKvHeads {} x head dim {})",
                               index, shape[2], kvWidth, heads.kvHeads, heads.headDim)};
    }
  }
  if (inputs[2].shape[1] != inputs[1].shape[1]) {
    return Error{fmt::format("inputs[2] dim 1 is {} but inputs[1] dim 1 is {}", inputs[2].shape[1],
                             inputs[1].shape[1])};
  }
  return {};
}

Expected<TensorType> inferAttention(OpKind /*kind*/, const OpAttrs& attrs,
                                    std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 3); !status) return status.error();
  for (size_t index = 0; index < 3; ++index) {
    if (auto status = expectRank(inputs, index, 3); !status) return status.error();
  }
  auto heads = attentionHeads(attrs, inputs[0].shape);
  if (!heads) return heads.error();
  if (auto status = checkKeysAndValues(inputs, *heads); !status) return status.error();
  return inputs[0];
}

// Scores in memory (attrs.scoresInMemory): bytes per element of the [b, hq, s, skv] score
// matrix, e the compute dtype's bytes:
//   - forward: Q K^T writes S (e); the fused scale-mask-softmax reads S and writes P (2e);
//     dropout reads P and writes P' and its 1-byte mask (2e + 1); P' V reads P' (e): 6e + 1,
//     13 for fp16/bf16;
//   - kept for backward: P, the mask and P' (2e + 1, 5 for fp16/bf16: Korthikanti et al.
//     2022's 5 a s^2 b term of a layer's activation memory).
double scoreElements(const TypedOp& op) {
  const Shape& query = op.inputs[0].shape;
  return static_cast<double>(query[0]) * static_cast<double>(op.attrs.numHeads) *
         static_cast<double>(query[1]) * static_cast<double>(op.inputs[1].shape[1]);
}

int64_t scoreForwardBytes(const TypedOp& op) {
  const double e = static_cast<double>(dtypeBytes(op.inputs[0].dtype));
  return static_cast<int64_t>(scoreElements(op) * (6 * e + 1));
}

// Backward, per score element: the dP matmul writes dP (e); dropout's backward reads it and the
// mask and writes (2e + 1); the softmax's backward reads P and the gradient and writes dS (3e);
// the dQ and dK matmuls read dS (2e); the dV matmul reads P' (e): 9e + 1, 19 for fp16/bf16.
int64_t scoreBackwardBytes(const TypedOp& op) {
  const double e = static_cast<double>(dtypeBytes(op.inputs[0].dtype));
  return static_cast<int64_t>(scoreElements(op) * (9 * e + 1));
}

int64_t scoreKeptBytes(const TypedOp& op) {
  const double e = static_cast<double>(dtypeBytes(op.inputs[0].dtype));
  return static_cast<int64_t>(scoreElements(op) * (2 * e + 1));
}

// Two matmuls per head, S = Q K^T and O = P V, each 2*s*skv*d: 4*b*s*skv*hq*d. A causal mask
// lets FlashAttention skip the upper triangle, about half of the blocks; with the scores in
// memory the whole matrix is computed and the mask applied in the softmax. Softmax work is not
// counted in FLOPs (it runs on the non-matmul units and is < 1/d of the total).
double attentionFlops(const TypedOp& op) {
  const Shape& query = op.inputs[0].shape;
  const double keyLength = static_cast<double>(op.inputs[1].shape[1]);
  const double flops = 4.0 * static_cast<double>(query[0]) * static_cast<double>(query[1]) *
                       keyLength * static_cast<double>(query[2]);
  return op.attrs.causal && !op.attrs.scoresInMemory ? flops / 2 : flops;
}

// FlashAttention-2's backward recomputes S = Q K^T and runs four more matmuls (dV, dP, dQ, dK):
// five matmuls against the forward's two, so 2.5x forward FLOPs. Dao 2023, "FlashAttention-2",
// sec. 4.1: "we multiply by 2.5 (since there are 2 matmuls in the forward pass and 5 matmuls in
// the backward pass, due to recomputation)". It keeps q, k, v, the output and the fp32
// log-sum-exp of each query row of each head. With the scores in memory nothing is recomputed:
// four matmuls (2x forward FLOPs) on the kept P, mask and P'.
BackwardRule attentionBackward(const TypedOp& op) {
  if (op.attrs.scoresInMemory) {
    // q, k, v and dO read, dq, dk and dv written: twice the streaming traffic, plus the scores'.
    return BackwardRule{
        2.0 * attentionFlops(op),
        {savedInput(0), savedInput(1), savedInput(2), savedExtra(scoreKeptBytes(op))},
        2 * streamingBytes(op) + scoreBackwardBytes(op)};
  }
  const Shape& query = op.inputs[0].shape;
  const int64_t logSumExpBytes = query[0] * op.attrs.numHeads * query[1] * kLogSumExpBytes;
  return BackwardRule{
      2.5 * attentionFlops(op),
      {savedInput(0), savedInput(1), savedInput(2), savedOutput(), savedExtra(logSumExpBytes)}};
}

// q, k, v read once, the output and the log-sum-exp written once; in FlashAttention S and P
// never reach memory. With the scores in memory, their forward traffic (scoreForwardBytes).
int64_t attentionBytes(const TypedOp& op) {
  if (op.attrs.scoresInMemory) return streamingBytes(op) + scoreForwardBytes(op);
  return streamingBytes(op) + savedExtraBytes(attentionBackward(op));
}

Expected<TensorType> inferRotary(OpKind /*kind*/, const OpAttrs& attrs,
                                 std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 1); !status) return status.error();
  if (auto status = expectRank(inputs, 0, 3); !status) return status.error();
  if (auto status = expectPositive("attrs.numHeads", attrs.numHeads); !status) {
    return status.error();
  }
  const int64_t width = inputs[0].shape[2];
  if (width % attrs.numHeads != 0) {
    return Error{fmt::format("inputs[0] dim 2 is {}, not divisible by attrs.numHeads {}", width,
                             attrs.numHeads)};
  }
  if ((width / attrs.numHeads) % 2 != 0) {
    return Error{fmt::format("head dim {} (inputs[0] dim 2 / attrs.numHeads) must be even",
                             width / attrs.numHeads)};
  }
  return inputs[0];
}

// Each output element of a rotated pair (x1, x2) is x1*cos - x2*sin or x2*cos + x1*sin:
// two multiplies and one add = 3 per element. cos/sin are precomputed tables, not counted.
constexpr double kRotaryFlopsPerElement = 3;

double rotaryFlops(const TypedOp& op) { return kRotaryFlopsPerElement * elements(op.output); }

// The gradient is the rotation by -theta: the same 3 per element, nothing to keep, and one pass
// (the output gradient read, the input gradient written), as the forward's.
BackwardRule rotaryBackward(const TypedOp& op) {
  BackwardRule rule{rotaryFlops(op), {}};
  rule.bytes = streamingBytes(op);
  return rule;
}

constexpr FamilySemantics kAttention{inferAttention, attentionFlops, attentionBytes,
                                     attentionBackward};
constexpr FamilySemantics kRotary{inferRotary, rotaryFlops, streamingBytes, rotaryBackward};

}  // namespace

const FamilySemantics& attentionFamily() { return kAttention; }
const FamilySemantics& rotaryFamily() { return kRotary; }

}  // namespace autopar::ir::ops
