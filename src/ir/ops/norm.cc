/// \file
/// LayerNorm (inputs x, gamma [h], beta [h]) and RMSNorm (inputs x, gamma [h]) over the last dim
/// of x, h = x.shape.back(). The output has x's type; gamma and beta may be in another dtype
/// (fp32 weights beside bf16 activations).
///   LayerNorm: y = (x - mean) * rstd * gamma + beta,  rstd = 1/sqrt(var + eps)
///   RMSNorm:   y = x * rstd * gamma,                  rstd = 1/sqrt(mean(x^2) + eps)
/// Per-row work (one rsqrt per row) is negligible next to the per-element work and not counted.

#include <fmt/format.h>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

struct NormCost {
  size_t inputCount;
  // Forward per element.
  //   LayerNorm: sum for the mean (1), x - mean (1), square (1), sum for the variance (1),
  //              * rstd (1), * gamma (1), + beta (1) = 7.
  //   RMSNorm:   square (1), sum (1), * rstd (1), * gamma (1) = 4.
  double forwardFlopsPerElement;
  // Backward per element (xhat = normalised x, g incoming gradient):
  //   LayerNorm: xhat = (x - mean) * rstd (2), dbeta += g (1), dgamma += g * xhat (2),
  //              dxhat = g * gamma (1), sum(dxhat) and sum(dxhat * xhat) (3),
  //              dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) (4) = 13.
  //   RMSNorm:   xhat = x * rstd (1), dgamma += g * xhat (2), dxhat = g * gamma (1),
  //              sum(dxhat * xhat) (2), dx = rstd * (dxhat - xhat * mean(dxhat * xhat)) (3) = 9.
  double backwardFlopsPerElement;
  // fp32 statistics kept per row for backward: LayerNorm mean and rstd, RMSNorm rstd (as in
  // Apex/Megatron fused norms).
  int64_t statisticsBytesPerRow;
};

constexpr NormCost kLayerNormCost{3, 7, 13, 2 * 4};
constexpr NormCost kRMSNormCost{2, 4, 9, 4};

const NormCost& normCost(OpKind kind) {
  return kind == OpKind::kLayerNorm ? kLayerNormCost : kRMSNormCost;
}

Expected<TensorType> inferNorm(OpKind kind, const OpAttrs& attrs,
                               std::span<const TensorType> inputs) {
  const NormCost& cost = normCost(kind);
  if (auto status = expectInputCount(inputs, cost.inputCount); !status) return status.error();
  if (auto status = expectMinRank(inputs, 0, 1); !status) return status.error();
  if (!(attrs.epsilon > 0)) {
    return Error{fmt::format("attrs.epsilon is {}, expected a positive value", attrs.epsilon)};
  }
  const Shape affineShape{inputs[0].shape.back()};
  for (size_t index = 1; index < inputs.size(); ++index) {
    if (inputs[index].shape != affineShape) {
      return Error{fmt::format("inputs[{}] shape {} differs from {} (the last dim of inputs[0])",
                               index, shapeToString(inputs[index].shape),
                               shapeToString(affineShape))};
    }
  }
  return inputs[0];
}

double normFlops(const TypedOp& op) {
  return normCost(op.kind).forwardFlopsPerElement * elements(op.output);
}

// Keeps x and the per-row statistics. gamma is needed too, but it is a parameter and resident
// anyway, so it is not listed (listing it would count its memory twice).
// Backward traffic: read g, x and the statistics, write dx (the affine parameters' gradients
// are row sums of the same pass): 3 activation-sized tensors plus the statistics.
BackwardRule normBackward(const TypedOp& op) {
  const NormCost& cost = normCost(op.kind);
  const int64_t rows = numElements(op.output.shape) / op.output.shape.back();
  const int64_t statistics = rows * cost.statisticsBytesPerRow;
  return BackwardRule{cost.backwardFlopsPerElement * elements(op.output),
                      {savedInput(0), savedExtra(statistics)},
                      3 * op.output.bytes() + statistics};
}

// The statistics are also written in the forward pass.
int64_t normBytes(const TypedOp& op) {
  return streamingBytes(op) + savedExtraBytes(normBackward(op));
}

constexpr FamilySemantics kNorm{inferNorm, normFlops, normBytes, normBackward};

}  // namespace

const FamilySemantics& normFamily() { return kNorm; }

}  // namespace autopar::ir::ops
