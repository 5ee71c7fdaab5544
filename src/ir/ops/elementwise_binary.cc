/// \file
/// Elementwise binary ops (Add, Sub, Mul, Div) with numpy broadcasting: shapes are aligned at
/// their last dim and each pair of dims must be equal or contain a 1.
///   [8, 1, 4] + [3, 1] -> [8, 3, 4]

#include <fmt/format.h>

#include <algorithm>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

Expected<Shape> broadcastShapes(const Shape& lhs, const Shape& rhs) {
  const size_t rank = std::max(lhs.size(), rhs.size());
  Shape output(rank, 1);
  for (size_t fromEnd = 1; fromEnd <= rank; ++fromEnd) {
    const int64_t lhsDim = fromEnd <= lhs.size() ? lhs[lhs.size() - fromEnd] : 1;
    const int64_t rhsDim = fromEnd <= rhs.size() ? rhs[rhs.size() - fromEnd] : 1;
    if (lhsDim != rhsDim && lhsDim != 1 && rhsDim != 1) {
      return Error{
          fmt::format("inputs[0] dim {} (size {}) and inputs[1] dim {} (size {}) cannot "
                      "broadcast",
                      lhs.size() - fromEnd, lhsDim, rhs.size() - fromEnd, rhsDim)};
    }
    output[rank - fromEnd] = lhsDim == 1 ? rhsDim : lhsDim;
  }
  return output;
}

Expected<TensorType> inferBinary(OpKind /*kind*/, const OpAttrs& /*attrs*/,
                                 std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 2); !status) return status.error();
  if (auto status = expectSameDType(inputs, 1, 0); !status) return status.error();
  auto shape = broadcastShapes(inputs[0].shape, inputs[1].shape);
  if (!shape) return shape.error();
  return TensorType{std::move(*shape), inputs[0].dtype};
}

// One arithmetic operation per output element.
double binaryFlops(const TypedOp& op) { return elements(op.output); }

// Per output element, with g the incoming gradient and c = a op b:
//   Add: dA = g, dB = g                    -> 1 (the reduction of a broadcast operand's gradient)
//   Sub: dA = g, dB = -g                   -> 1 (the negation)
//   Mul: dA = g*b, dB = g*a                -> 2, needs a and b
//   Div: dA = g/b, dB = -g*a/b^2 = -dA*c   -> 3 (divide, multiply, negate), needs b and c.
//        PyTorch's DivBackward0 keeps a and b instead, so a, b and c are all kept: the union of
//        the two formulations, an upper bound on the memory.
// Backward traffic, with T the output's bytes: Mul and Div read g and their two kept tensors and
// write two gradients (5T); Add and Sub pass g on to both operands unchanged, and the one pass
// left is where a gradient is summed with another or reduced over a broadcast operand (read g,
// write the sum: 2T).
BackwardRule binaryBackward(const TypedOp& op) {
  const double numel = elements(op.output);
  const int64_t outputBytes = op.output.bytes();
  switch (op.kind) {
    case OpKind::kMul:
      return BackwardRule{2 * numel, {savedInput(0), savedInput(1)}, 5 * outputBytes};
    case OpKind::kDiv:
      return BackwardRule{
          3 * numel, {savedInput(0), savedInput(1), savedOutput()}, 5 * outputBytes};
    default:  // Add, Sub
      return BackwardRule{numel, {}, 2 * outputBytes};
  }
}

constexpr FamilySemantics kElementwiseBinary{inferBinary, binaryFlops, streamingBytes,
                                             binaryBackward};

}  // namespace

const FamilySemantics& elementwiseBinaryFamily() { return kElementwiseBinary; }

}  // namespace autopar::ir::ops
