/// \file
/// Gather on axis 0, the embedding lookup: table [v, h...], indices [i...] of an integer dtype
/// -> [i..., h...] in the table's dtype.
///   Gather table [32000, 4096] bf16, indices [8, 2048] int64 -> [8, 2048, 4096] bf16

#include <fmt/format.h>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

/// Seed 001's manual_split: positive part sizes that sum to the table's dim 0.
Status checkManualSplit(const OpAttrs& attrs, const TensorType& table) {
  if (attrs.manualSplit.empty()) return {};
  int64_t sum = 0;
  for (int64_t part : attrs.manualSplit) {
    if (part <= 0) {
      return Error{fmt::format("attrs.manual_split {} has a part of {}, expected sizes > 0",
                               shapeToString(attrs.manualSplit), part)};
    }
    sum += part;
  }
  if (sum != table.shape[0]) {
    return Error{
        fmt::format("attrs.manual_split {} sums to {}, expected the {} rows of input 0 (dim 0)",
                    shapeToString(attrs.manualSplit), sum, table.shape[0])};
  }
  return {};
}

Expected<TensorType> inferGather(OpKind /*kind*/, const OpAttrs& attrs,
                                 std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 2); !status) return status.error();
  if (auto status = expectMinRank(inputs, 0, 1); !status) return status.error();
  if (auto status = expectIntegerDType(inputs, 1); !status) return status.error();
  if (auto status = checkManualSplit(attrs, inputs[0]); !status) return status.error();
  Shape output = inputs[1].shape;
  output.insert(output.end(), inputs[0].shape.begin() + 1, inputs[0].shape.end());
  return TensorType{std::move(output), inputs[0].dtype};
}

// Only the gathered rows of the table are read, not the whole table: the output's bytes read
// and written once each, plus the indices.
int64_t gatherBytes(const TypedOp& op) { return 2 * op.output.bytes() + op.inputs[1].bytes(); }

// The table gradient is a scatter-add of g into the looked-up rows: one add per output element.
// It needs the indices.
BackwardRule gatherBackward(const TypedOp& op) {
  return BackwardRule{elements(op.output), {savedInput(1)}};
}

constexpr FamilySemantics kGather{inferGather, zeroFlops, gatherBytes, gatherBackward};

}  // namespace

const FamilySemantics& gatherFamily() { return kGather; }

}  // namespace autopar::ir::ops
