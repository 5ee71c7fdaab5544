/// \file
/// Concat and Slice, both copies with no arithmetic.
///   Concat [2,3] and [2,5] on attrs.axis 1            -> [2,8]
///   Slice  [4,6] starts {1,0} ends {3,6} (half-open)  -> [2,6]

#include <fmt/format.h>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

// inputs[index] must match inputs[0] in rank, dtype and every dim but `axis`.
Status checkConcatOperand(std::span<const TensorType> inputs, size_t index, int64_t axis) {
  const Shape& first = inputs[0].shape;
  const Shape& shape = inputs[index].shape;
  if (shape.size() != first.size()) {
    return Error{fmt::format("inputs[{}] has rank {}, expected {} (the rank of inputs[0])", index,
                             shape.size(), first.size())};
  }
  if (auto status = expectSameDType(inputs, index, 0); !status) return status;
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    if (static_cast<int64_t>(dim) != axis && shape[dim] != first[dim]) {
      return Error{fmt::format("inputs[{}] dim {} is {} but inputs[0] dim {} is {}", index, dim,
                               shape[dim], dim, first[dim])};
    }
  }
  return {};
}

Expected<TensorType> inferConcat(OpKind /*kind*/, const OpAttrs& attrs,
                                 std::span<const TensorType> inputs) {
  if (inputs.empty()) return Error{"expected at least 1 input, got 0"};
  const auto rank = static_cast<int64_t>(inputs[0].shape.size());
  auto axis = normalizeAxis("attrs.axis", attrs.axis, rank);
  if (!axis) return axis.error();
  TensorType output = inputs[0];
  for (size_t index = 1; index < inputs.size(); ++index) {
    if (auto status = checkConcatOperand(inputs, index, *axis); !status) return status.error();
    output.shape[*axis] += inputs[index].shape[*axis];
  }
  return output;
}

Status checkSliceAttrs(const OpAttrs& attrs, const Shape& input) {
  for (const auto& [field, values] :
       {std::pair{"attrs.starts", &attrs.starts}, std::pair{"attrs.ends", &attrs.ends}}) {
    if (values->size() != input.size()) {
      return Error{fmt::format("{} has size {}, expected {} (the rank of inputs[0])", field,
                               values->size(), input.size())};
    }
  }
  for (size_t dim = 0; dim < input.size(); ++dim) {
    const int64_t start = attrs.starts[dim];
    const int64_t end = attrs.ends[dim];
    if (start < 0 || start >= end || end > input[dim]) {
      return Error{fmt::format(
          "attrs.starts[{0}] and attrs.ends[{0}] give [{1}, {2}), expected 0 <= start < end <= {3}",
          dim, start, end, input[dim])};
    }
  }
  return {};
}

Expected<TensorType> inferSlice(OpKind /*kind*/, const OpAttrs& attrs,
                                std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 1); !status) return status.error();
  if (auto status = checkSliceAttrs(attrs, inputs[0].shape); !status) return status.error();
  TensorType output = inputs[0];
  for (size_t dim = 0; dim < output.shape.size(); ++dim) {
    output.shape[dim] = attrs.ends[dim] - attrs.starts[dim];
  }
  return output;
}

// Only the sliced region is read: the output's bytes read once and written once.
int64_t sliceBytes(const TypedOp& op) { return 2 * op.output.bytes(); }

// Backward splits g into the inputs' gradients (Concat) or pads it with zeros (Slice): copies
// with no FLOPs and nothing saved.
BackwardRule copyBackward(const TypedOp& /*op*/) { return BackwardRule{}; }

constexpr FamilySemantics kConcat{inferConcat, zeroFlops, streamingBytes, copyBackward};
constexpr FamilySemantics kSlice{inferSlice, zeroFlops, sliceBytes, copyBackward};

}  // namespace

const FamilySemantics& concatFamily() { return kConcat; }
const FamilySemantics& sliceFamily() { return kSlice; }

}  // namespace autopar::ir::ops
