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

// Keeps the softmax of the logits in fp32 whatever their dtype, and the labels (which select
// the one-hot entry; 1/v of the logits' size). Megatron's vocab-parallel cross entropy upcasts
// the logits and keeps that copy, exponentiated and normalised in place, as the softmax
// (megatron/core/tensor_parallel/cross_entropy.py: calculate_logits_max, save_for_backward);
// PyTorch's log_softmax keeps its fp32 output (torchtitan upcasts the logits with .float()).
BackwardRule crossEntropyBackward(const TypedOp& op) {
  return BackwardRule{kBackwardFlopsPerLogit * elements(op.inputs[0]),
                      {savedInputAs(0, DType::kF32), savedInput(1)}};
}

constexpr FamilySemantics kCrossEntropy{inferCrossEntropy, crossEntropyFlops, streamingBytes,
                                        crossEntropyBackward};

}  // namespace

const FamilySemantics& crossEntropyFamily() { return kCrossEntropy; }

}  // namespace autopar::ir::ops
