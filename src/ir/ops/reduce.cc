/// \file
/// ReduceSum, ReduceMean, ReduceMax over attrs.axes (negative counts from the end; empty means
/// every axis). attrs.keepDims keeps reduced dims as size 1.
///   ReduceSum [2,3,4] axes {-1}            -> [2,3]
///   ReduceSum [2,3,4] axes {1} keepDims    -> [2,1,4]
///   ReduceMax [2,3,4] axes {}              -> []  (a scalar)

#include <fmt/format.h>

#include <vector>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

// Which dims of a rank-`rank` input are reduced, validated.
Expected<std::vector<bool>> reducedDims(const OpAttrs& attrs, int64_t rank) {
  std::vector<bool> reduced(rank, attrs.axes.empty());
  for (size_t index = 0; index < attrs.axes.size(); ++index) {
    auto axis = normalizeAxis(fmt::format("attrs.axes[{}]", index), attrs.axes[index], rank);
    if (!axis) return axis.error();
    if (reduced[*axis]) return Error{fmt::format("attrs.axes lists dim {} twice", *axis)};
    reduced[*axis] = true;
  }
  return reduced;
}

Expected<TensorType> inferReduce(OpKind /*kind*/, const OpAttrs& attrs,
                                 std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 1); !status) return status.error();
  const Shape& input = inputs[0].shape;
  auto reduced = reducedDims(attrs, static_cast<int64_t>(input.size()));
  if (!reduced) return reduced.error();
  Shape output;
  for (size_t dim = 0; dim < input.size(); ++dim) {
    if (!(*reduced)[dim]) {
      output.push_back(input[dim]);
    } else if (attrs.keepDims) {
      output.push_back(1);
    }
  }
  return TensorType{std::move(output), inputs[0].dtype};
}

// Sum and Max: one add or compare per input element. Mean adds one divide per output element.
double reduceFlops(const TypedOp& op) {
  const double inputElements = elements(op.inputs[0]);
  if (op.kind == OpKind::kReduceMean) return inputElements + elements(op.output);
  return inputElements;
}

// Per input element: Sum broadcasts g back (1, counted so the roofline charges the pass);
// Mean broadcasts g/n (1); Max compares x with the saved max and selects g (2), needing both.
BackwardRule reduceBackward(const TypedOp& op) {
  const double inputElements = elements(op.inputs[0]);
  if (op.kind == OpKind::kReduceMax) {
    return BackwardRule{2 * inputElements, {savedInput(0), savedOutput()}};
  }
  return BackwardRule{inputElements, {}};
}

constexpr FamilySemantics kReduce{inferReduce, reduceFlops, streamingBytes, reduceBackward};

}  // namespace

const FamilySemantics& reduceFamily() { return kReduce; }

}  // namespace autopar::ir::ops
