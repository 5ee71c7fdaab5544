/// \file
/// ReduceSum, ReduceMean and ReduceMax over attrs.axes (empty: every axis). Kept dims pass
/// through (the first, when kept, is the batch). A reduced dim of Sum or Mean is a reduction
/// factor: both are linear, so each device reduces its slice and the output is a partial sum
/// (Mean divides by the full count, so the partial results still add up). Max is not a sum, so
/// its reduced dims may not be cut. With keepDims the reduced output dims have size 1 and map to
/// no factor.
///   ReduceSum [b,s,h] axes {-1} -> [b,s]: factors d0 (batch), d1, r2 (reduction).

#include <fmt/format.h>

#include "rules/family_rules.h"

namespace autopar::rules {
namespace {

Expected<std::vector<bool>> reducedDims(const ir::OpAttrs& attrs, size_t rank) {
  std::vector<bool> reduced(rank, attrs.axes.empty());
  for (size_t index = 0; index < attrs.axes.size(); ++index) {
    auto axis = normalizeAxis(fmt::format("attrs.axes[{}]", index), attrs.axes[index], rank);
    if (!axis) return axis.error();
    reduced[*axis] = true;
  }
  return reduced;
}

}  // namespace

Expected<ShardingRule> reduceRule(const OpTypes& op) {
  if (auto status = expectInputCount(op, 1); !status) return status.error();
  const size_t rank = op.inputs[0].shape.size();
  auto reduced = reducedDims(op.attrs, rank);
  if (!reduced) return reduced.error();
  const FactorKind reducedKind =
      op.kind == ir::OpKind::kReduceMax ? FactorKind::kNeedReplication : FactorKind::kReduction;
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  std::vector<std::vector<int>> inputDims;
  std::vector<std::vector<int>> outputDims;
  for (size_t dim = 0; dim < rank; ++dim) {
    if ((*reduced)[dim]) {
      inputDims.push_back({builder.factor(fmt::format("r{}", dim), reducedKind)});
      if (op.attrs.keepDims) outputDims.emplace_back();
      continue;
    }
    const int kept = builder.factor(fmt::format("d{}", dim), FactorKind::kPassThrough, dim == 0);
    inputDims.push_back({kept});
    outputDims.push_back({kept});
  }
  if (outputDims.size() != op.outputs[0].shape.size()) {
    return Error{fmt::format("output has rank {}, expected {} from attrs.axes and attrs.keepDims",
                             op.outputs[0].shape.size(), outputDims.size())};
  }
  builder.operand(0, inputDims).result(0, outputDims);
  return std::move(builder).build();
}

}  // namespace autopar::rules
