/// \file
/// Softmax over attrs.axis (default last): pointwise, except that the softmax axis needs the
/// whole row (its max and sum), so its factor may not be cut.
///   Softmax [b,h,s,s] axis -1: factors d0 (batch), d1, d2 pass through; d3 needs replication.

#include "rules/family_rules.h"

namespace autopar::rules {

Expected<ShardingRule> softmaxRule(const OpTypes& op) {
  if (auto status = expectInputCount(op, 1); !status) return status.error();
  auto axis = normalizeAxis("attrs.axis", op.attrs.axis, op.inputs[0].shape.size());
  if (!axis) return axis.error();
  ShardingRule rule = pointwiseRule(op.inputs, op.outputs[0], /*firstIsBatch=*/*axis != 0);
  rule.factors[*axis].kind = FactorKind::kNeedReplication;
  return rule;
}

}  // namespace autopar::rules
