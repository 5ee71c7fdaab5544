/// \file
/// Elementwise unary ops: the output has the input's shape and dtype (Cast: attrs.castTo).
///
/// FLOP convention, used for every constant below: one add, multiply, compare, divide or
/// transcendental (exp, tanh, sqrt) is one FLOP per element; random-number generation is not
/// counted. Backward counts include the final multiply by the incoming gradient g.

#include <fmt/format.h>

#include <array>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

enum class UnarySaves { kNothing, kInput, kOutput, kMask };

struct UnaryCost {
  OpKind kind;
  double forwardFlopsPerElement;
  double backwardFlopsPerElement;
  UnarySaves saves;
};

// Derivations (x input, y output, g incoming gradient, s = sigmoid(x)):
//   ReLU    y = max(x,0): 1.  dx = g where y > 0: 1 (select); needs y.
//   GeLU    tanh approximation (Hendrycks & Gimpel 2016, "Gaussian Error Linear Units", sec. 2):
//           y = 0.5x(1 + tanh(u)), u = x(c + c*a*x^2), c = sqrt(2/pi), a = 0.044715.
//           Forward: x^2, *(c*a), +c, *x, tanh, +1, *x, *0.5 = 8.
//           Backward: recompute t = tanh(u) (5); 0.5(1+t) (2); 1-t^2 (2); du/dx = c + 3ca*x^2
//           (2, reusing x^2); 0.5x * (1-t^2) * du/dx (3); sum (1); *g (1) = 16. Needs x.
//   SiLU    y = x*s, s = 1/(1+exp(-x)): neg, exp, +1, div, *x = 5.
//           dx = g * s * (1 + x(1-s)): recompute s (4), 1-s, *x, +1, *s, *g = 9. Needs x.
//   Tanh    1.  dx = g(1 - y^2): 3. Needs y.
//   Sigmoid neg, exp, +1, div = 4.  dx = g*y(1-y): 3. Needs y.
//   Exp     1.  dx = g*y: 1. Needs y.
//   Neg     1.  dx = -g: 1.
//   Sqrt    1.  dx = g / (2y): 2. Needs y.
//   Cast    a conversion, no arithmetic: 0 both ways (its cost is its bytes).
//   Dropout y = x * mask * 1/(1-p): 2.  dx = g * mask * 1/(1-p): 2. Needs the mask.
constexpr std::array<UnaryCost, 10> kUnaryCosts = {{
    {OpKind::kReLU, 1, 1, UnarySaves::kOutput},
    {OpKind::kGeLU, 8, 16, UnarySaves::kInput},
    {OpKind::kSiLU, 5, 9, UnarySaves::kInput},
    {OpKind::kTanh, 1, 3, UnarySaves::kOutput},
    {OpKind::kSigmoid, 4, 3, UnarySaves::kOutput},
    {OpKind::kExp, 1, 1, UnarySaves::kOutput},
    {OpKind::kNeg, 1, 1, UnarySaves::kNothing},
    {OpKind::kSqrt, 1, 2, UnarySaves::kOutput},
    {OpKind::kCast, 0, 0, UnarySaves::kNothing},
    {OpKind::kDropout, 2, 2, UnarySaves::kMask},
}};

// The dropout mask keeps one byte per element (PyTorch's native_dropout returns a bool mask).
constexpr int64_t kDropoutMaskBytesPerElement = 1;

const UnaryCost& unaryCost(OpKind kind) {
  for (const auto& cost : kUnaryCosts) {
    if (cost.kind == kind) return cost;
  }
  // familyOf() sends only the kinds listed above here.
  return kUnaryCosts.front();
}

Expected<TensorType> inferUnary(OpKind kind, const OpAttrs& attrs,
                                std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 1); !status) return status.error();
  if (kind == OpKind::kDropout && !(attrs.dropoutRate >= 0 && attrs.dropoutRate < 1)) {
    return Error{
        fmt::format("attrs.dropoutRate is {}, expected a value in [0, 1)", attrs.dropoutRate)};
  }
  TensorType output = inputs[0];
  if (kind == OpKind::kCast) output.dtype = attrs.castTo;
  return output;
}

double unaryFlops(const TypedOp& op) {
  return unaryCost(op.kind).forwardFlopsPerElement * elements(op.output);
}

// Backward traffic, with T the output's bytes: read g and what was kept, write dx; 3T when an
// input or output is kept, 2T plus the 1-byte mask per element for Dropout, 2T otherwise.
BackwardRule unaryBackward(const TypedOp& op) {
  const UnaryCost& cost = unaryCost(op.kind);
  const int64_t outputBytes = op.output.bytes();
  BackwardRule rule{cost.backwardFlopsPerElement * elements(op.output), {}, 2 * outputBytes};
  if (cost.saves == UnarySaves::kInput || cost.saves == UnarySaves::kOutput) {
    rule.bytes = 3 * outputBytes;
  }
  switch (cost.saves) {
    case UnarySaves::kNothing:
      break;
    case UnarySaves::kInput:
      rule.saved.push_back(savedInput(0));
      break;
    case UnarySaves::kOutput:
      rule.saved.push_back(savedOutput());
      break;
    case UnarySaves::kMask:
      rule.saved.push_back(savedExtra(kDropoutMaskBytesPerElement * numElements(op.output.shape)));
      rule.bytes += kDropoutMaskBytesPerElement * numElements(op.output.shape);
      break;
  }
  return rule;
}

// Dropout also writes its mask in the forward pass.
int64_t unaryBytes(const TypedOp& op) {
  return streamingBytes(op) + savedExtraBytes(unaryBackward(op));
}

constexpr FamilySemantics kElementwiseUnary{inferUnary, unaryFlops, unaryBytes, unaryBackward};

}  // namespace

const FamilySemantics& elementwiseUnaryFamily() { return kElementwiseUnary; }

}  // namespace autopar::ir::ops
