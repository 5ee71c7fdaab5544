/// \file
/// Softmax over attrs.axis (default -1, the last dim); the output has the input's type.
///   y = exp(x - max(x)) / sum(exp(x - max(x)))

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

// Per element: max (1 compare), subtract (1), exp (1), sum (1 add), divide (1) = 5.
constexpr double kForwardFlopsPerElement = 5;
// dx = y * (g - sum(g*y)): g*y (1), sum (1), subtract (1), multiply by y (1) = 4.
constexpr double kBackwardFlopsPerElement = 4;

Expected<TensorType> inferSoftmax(OpKind /*kind*/, const OpAttrs& attrs,
                                  std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 1); !status) return status.error();
  const auto rank = static_cast<int64_t>(inputs[0].shape.size());
  if (auto axis = normalizeAxis("attrs.axis", attrs.axis, rank); !axis) return axis.error();
  return inputs[0];
}

double softmaxFlops(const TypedOp& op) { return kForwardFlopsPerElement * elements(op.output); }

// Backward traffic: read y and g, write dx.
BackwardRule softmaxBackward(const TypedOp& op) {
  return BackwardRule{
      kBackwardFlopsPerElement * elements(op.output), {savedOutput()}, 3 * op.output.bytes()};
}

constexpr FamilySemantics kSoftmax{inferSoftmax, softmaxFlops, streamingBytes, softmaxBackward};

}  // namespace

const FamilySemantics& softmaxFamily() { return kSoftmax; }

}  // namespace autopar::ir::ops
