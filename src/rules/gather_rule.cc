/// \file
/// Gather on axis 0, the embedding lookup: table [v, h...], indices [i...] -> [i..., h...].
/// Index dims pass through to the output (the first is the batch) and so do the table's h dims.
/// v is a reduction factor: with the table cut by rows (Megatron's vocab-parallel embedding) each
/// device looks up the indices that fall in its rows, writes zeros for the others, and the output
/// is a partial sum over v's axis.
///   Gather table [32000,4096], indices [8,2048] -> [8,2048,4096]:
///   factors i0 (batch, 8), i1 (2048), v (32000, reduction), h (4096).
/// The index factors come first so that the batch takes the outermost device-matrix axis.

#include "rules/family_rules.h"

namespace autopar::rules {

Expected<ShardingRule> gatherRule(const OpTypes& op) {
  if (auto status = expectInputCount(op, 2); !status) return status.error();
  if (auto status = expectRank(op, 0, 1, /*minimum=*/true); !status) return status.error();
  const size_t indexCount = op.inputs[1].shape.size();
  const size_t hiddenCount = op.inputs[0].shape.size() - 1;
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  std::vector<std::vector<int>> indexDims;
  for (size_t dim = 0; dim < indexCount; ++dim) {
    indexDims.push_back({builder.factor(indexedName("i", dim, indexCount), FactorKind::kPassThrough,
                                        /*isBatch=*/dim == 0)});
  }
  std::vector<std::vector<int>> tableDims{{builder.factor("v", FactorKind::kReduction)}};
  std::vector<std::vector<int>> outputDims = indexDims;
  for (size_t dim = 0; dim < hiddenCount; ++dim) {
    const int hidden = builder.factor(indexedName("h", dim, hiddenCount));
    tableDims.push_back({hidden});
    outputDims.push_back({hidden});
  }
  builder.operand(0, tableDims).operand(1, indexDims).result(0, outputDims);
  return std::move(builder).build();
}

}  // namespace autopar::rules
