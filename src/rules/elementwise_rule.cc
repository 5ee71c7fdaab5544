/// \file
/// Elementwise binary (Add, Sub, Mul, Div, numpy broadcasting) and unary ops (ReLU, GeLU, ...,
/// Cast, Dropout): one pass-through factor per output dim (Shardy's buildPointwise). An input dim
/// broadcast from size 1 maps to no factor, so a bias [h] added to x [b,s,h] shares only h.
/// Dropout's mask is drawn per element, so it shards like any other unary op.

#include "rules/family_rules.h"

namespace autopar::rules {

Expected<ShardingRule> elementwiseRule(const OpTypes& op) {
  if (op.inputs.empty()) return Error{"expected at least 1 input, got 0"};
  return pointwiseRule(op.inputs, op.outputs[0]);
}

}  // namespace autopar::rules
