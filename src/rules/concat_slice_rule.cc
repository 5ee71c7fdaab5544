/// \file
/// Concat and Slice keep every dim they do not touch.
///   Concat along attrs.axis: the axis maps to no factor (its parts come from different inputs,
///   so a cut would not line up); every other dim is one factor shared by all inputs and the
///   output. Concat [b,s,h1] and [b,s,h2] axis 2: factors d0 (batch), d1; dim 2 none.
///   Slice: a dim that is actually sliced (its output size differs from its input size) maps to
///   no factor; an untouched dim passes through. Slice [8,10] starts {0,2} ends {8,6} -> [8,4]:
///   factor d0 (batch); dim 1 none.

#include <fmt/format.h>

#include "rules/family_rules.h"

namespace autopar::rules {
namespace {

// A pass-through factor named after its dim, the first one the batch.
int dimFactor(ShardingRuleBuilder& builder, size_t dim) {
  return builder.factor(fmt::format("d{}", dim), FactorKind::kPassThrough, /*isBatch=*/dim == 0);
}

}  // namespace

Expected<ShardingRule> concatRule(const OpTypes& op) {
  if (op.inputs.empty()) return Error{"expected at least 1 input, got 0"};
  const size_t rank = op.inputs[0].shape.size();
  auto axis = normalizeAxis("attrs.axis", op.attrs.axis, rank);
  if (!axis) return axis.error();
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  std::vector<std::vector<int>> dims(rank);
  for (size_t dim = 0; dim < rank; ++dim) {
    if (static_cast<int64_t>(dim) != *axis) dims[dim] = {dimFactor(builder, dim)};
  }
  for (size_t index = 0; index < op.inputs.size(); ++index) {
    if (auto status = expectRank(op, index, rank); !status) return status.error();
    builder.operand(static_cast<int>(index), dims);
  }
  builder.result(0, dims);
  return std::move(builder).build();
}

Expected<ShardingRule> sliceRule(const OpTypes& op) {
  if (auto status = expectInputCount(op, 1); !status) return status.error();
  const ir::Shape& input = op.inputs[0].shape;
  const ir::Shape& output = op.outputs[0].shape;
  if (output.size() != input.size()) {
    return Error{fmt::format("output has rank {}, expected {} (the rank of inputs[0])",
                             output.size(), input.size())};
  }
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  std::vector<std::vector<int>> dims(input.size());
  for (size_t dim = 0; dim < input.size(); ++dim) {
    if (output[dim] == input[dim]) dims[dim] = {dimFactor(builder, dim)};
  }
  builder.operand(0, dims).result(0, dims);
  return std::move(builder).build();
}

}  // namespace autopar::rules
