/// \file
/// Transpose by attrs.perm: one pass-through factor per input dim (the first is the batch);
/// output dim j holds input dim perm[j]'s factor.
///   Transpose [b,s,h] perm {1,0,2} -> [s,b,h]: input dims {d0},{d1},{d2}; output {d1},{d0},{d2}.

#include <fmt/format.h>

#include "rules/family_rules.h"

namespace autopar::rules {

Expected<ShardingRule> transposeRule(const OpTypes& op) {
  if (auto status = expectInputCount(op, 1); !status) return status.error();
  const size_t rank = op.inputs[0].shape.size();
  if (op.attrs.perm.size() != rank) {
    return Error{fmt::format("attrs.perm has {} entries, expected {} (the rank of inputs[0])",
                             op.attrs.perm.size(), rank)};
  }
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  std::vector<std::vector<int>> inputDims;
  for (size_t dim = 0; dim < rank; ++dim) {
    inputDims.push_back({builder.factor(fmt::format("d{}", dim), FactorKind::kPassThrough,
                                        /*isBatch=*/dim == 0)});
  }
  std::vector<std::vector<int>> outputDims;
  for (size_t dim = 0; dim < rank; ++dim) {
    auto source = normalizeAxis(fmt::format("attrs.perm[{}]", dim), op.attrs.perm[dim], rank);
    if (!source) return source.error();
    outputDims.push_back(inputDims[*source]);
  }
  builder.operand(0, inputDims).result(0, outputDims);
  return std::move(builder).build();
}

}  // namespace autopar::rules
