/// \file
/// CrossEntropy: logits [..., v] (floating) and integer labels [...] over the same leading dims
/// -> the mean loss, an fp32 scalar.
///   CrossEntropy logits [8, 2048, 32000] bf16, labels [8, 2048] int64 -> [] fp32

#include <fmt/format.h>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

// Per logit: row max (1 compare), x - max (1), exp (1), sum (1 add), and the log of the sum
// with the label pick amortised over the row (counted as 1) = 5.
constexpr double kForwardFlopsPerLogit = 5;
// dlogits = (softmax(x) - onehot(label)) * g / N: rebuild softmax from the logits with the
// saved row statistics folded in (counted as 1), then subtract and scale (1) = 2.
constexpr double kBackwardFlopsPerLogit = 2;

Expected<TensorType> inferCrossEntropy(OpKind /*kind*/, const OpAttrs& /*attrs*/,
                                       std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 2); !status) return status.error();
  if (auto status = expectMinRank(inputs, 0, 1); !status) return status.error();
  if (auto status = expectFloatingDType(inputs, 0); !status) return status.error();
  if (auto status = expectIntegerDType(inputs, 1); !status) return status.error();
  const Shape& logits = inputs[0].shape;
  const Shape leadingDims(logits.begin(), logits.end() - 1);
  if (inputs[1].shape != leadingDims) {
    return Error{fmt::format("inputs[1] shape {} differs from {} (the leading dims of inputs[0])",
                             shapeToString(inputs[1].shape), shapeToString(leadingDims))};
  }
  return TensorType{Shape{}, DType::kF32};
}

double crossEntropyFlops(const TypedOp& op) {
  return kForwardFlopsPerLogit * elements(op.inputs[0]);
}

// The frameworks run the loss over an fp32 copy of the logits, in several passes: PyTorch's
// F.cross_entropy(logits.float(), labels) (torchtitan's loss) upcasts them (reading each logit
// and writing 4 bytes) and runs log_softmax (three fp32 reads and one write: 16 bytes) forward;
// backward nll_loss writes a dense fp32 gradient (4), log_softmax's backward reads two fp32
// tensors and writes one (12), and the upcast's backward casts back (4 + the logit's bytes).
// That is 22 + 22 bytes a bf16 logit, and one kernel reading the logits once would move 2:
// measured on an H100, the forward ran at 24.7 and the backward at 26.8 bytes a logit at
// 3.0 TB/s (bench/gpu_kernels.py, BENCHMARKS.md). Megatron's vocab-parallel cross entropy moves
// about as much (megatron/core/tensor_parallel/cross_entropy.py: .float(), max, the in-place
// subtract, exp and divide, 38 bytes forward; the in-place gradient and the cast back, 14).
constexpr int64_t kFp32PassBytesForward = 16;
constexpr int64_t kFp32PassBytesBackward = 16;
constexpr int64_t kFp32Bytes = 4;

/// Bytes a logit's upcast to fp32 moves, each way: none when the logits are fp32 already.
int64_t upcastBytes(const TensorType& logits) {
  return logits.dtype == DType::kF32 ? 0 : dtypeBytes(logits.dtype) + kFp32Bytes;
}

// flash-attn's fused kernel (OpAttrs::fusedLoss; flash_attn/ops/triton/cross_entropy.py) reads
// each logit once forward, in its dtype, and backward reads it again and writes its gradient.
int64_t logitPassBytes(const TypedOp& op, bool forward) {
  if (op.attrs.fusedLoss) return dtypeBytes(op.inputs[0].dtype) * (forward ? 1 : 2);
  return upcastBytes(op.inputs[0]) + (forward ? kFp32PassBytesForward : kFp32PassBytesBackward);
}

int64_t crossEntropyBytes(const TypedOp& op) {
  const auto logits = static_cast<int64_t>(elements(op.inputs[0]));
  return logits * logitPassBytes(op, true) + op.inputs[1].bytes() + op.output.bytes();
}

// Keeps the softmax of the logits in fp32 whatever their dtype, and the labels (which select
// the one-hot entry; 1/v of the logits' size). Megatron's vocab-parallel cross entropy upcasts
// the logits and keeps that copy, exponentiated and normalised in place, as the softmax
// (megatron/core/tensor_parallel/cross_entropy.py: calculate_logits_max, save_for_backward);
// PyTorch's log_softmax keeps its fp32 output (torchtitan upcasts the logits with .float()).
// flash-attn's fused kernel keeps the logits themselves and a per-token fp32 log-sum-exp (the
// size of the labels or less, counted as them).
// A chunked loss (OpAttrs::lossChunks) keeps none of the logits: each chunk's gradient is taken
// before the next chunk is made, so the backward needs only the labels.
BackwardRule crossEntropyBackward(const TypedOp& op) {
  BackwardRule rule{kBackwardFlopsPerLogit * elements(op.inputs[0]), {savedInput(1)}};
  if (op.attrs.lossChunks == 0) {
    rule.saved.insert(rule.saved.begin(),
                      op.attrs.fusedLoss ? savedInput(0) : savedInputAs(0, DType::kF32));
  }
  const auto logits = static_cast<int64_t>(elements(op.inputs[0]));
  rule.bytes = logits * logitPassBytes(op, false) + op.inputs[1].bytes();
  return rule;
}

constexpr FamilySemantics kCrossEntropy{inferCrossEntropy, crossEntropyFlops, crossEntropyBytes,
                                        crossEntropyBackward};

}  // namespace

const FamilySemantics& crossEntropyFamily() { return kCrossEntropy; }

}  // namespace autopar::ir::ops
