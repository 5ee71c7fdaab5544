/// \file
/// LayerNorm (x, gamma, beta) and RMSNorm (x, gamma) over the last dim h of x. The leading dims
/// of x pass through to the output (the first is the batch); h needs the whole row for its
/// statistics, so it may not be cut, and it is shared with gamma and beta.
///   LayerNorm x [b,s,h], gamma [h], beta [h] -> [b,s,h]: factors d0 (batch), d1, h (replicated).

#include <fmt/format.h>

#include "rules/family_rules.h"

namespace autopar::rules {

Expected<ShardingRule> normRule(const OpTypes& op) {
  if (op.inputs.empty()) return Error{"expected at least 1 input, got 0"};
  if (auto status = expectRank(op, 0, 1, /*minimum=*/true); !status) return status.error();
  const size_t leadingCount = op.inputs[0].shape.size() - 1;
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  std::vector<std::vector<int>> dims;
  for (size_t dim = 0; dim < leadingCount; ++dim) {
    dims.push_back({builder.factor(fmt::format("d{}", dim), FactorKind::kPassThrough,
                                   /*isBatch=*/dim == 0)});
  }
  const int hidden = builder.factor("h", FactorKind::kNeedReplication);
  dims.push_back({hidden});
  builder.operand(0, dims).result(0, dims);
  for (size_t index = 1; index < op.inputs.size(); ++index) {
    if (auto status = expectRank(op, index, 1); !status) return status.error();
    builder.operand(static_cast<int>(index), {{hidden}});
  }
  return std::move(builder).build();
}

}  // namespace autopar::rules
