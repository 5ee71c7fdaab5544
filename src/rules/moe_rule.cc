/// \file
/// MoEDispatch and MoECombine as factors (the token dispatcher of a mixture-of-experts layer).
///   MoEDispatch x [b, s, h], logits [b, s, E] -> [b, E, c, h]: factors b (batch), s, h, e
///   MoECombine  y [b, E, c, h], logits [b, s, E] -> [b, s, h]: factors b (batch), s, h, e
/// The slots c of each expert are s * topK / E, so the token factor s maps to the sequence dims
/// and to the slot dim: a device with a block of a sample's tokens dispatches them into the same
/// block of every expert's slots (routing spread evenly, as the ops assume).
///
/// Dispatch needs every expert's logit to pick a token's top k, so e may not be cut there
/// (kNeedReplication): its output holds every expert's slots for the device's tokens. Expert
/// parallelism then comes from the experts' linears, which cut e (BatchMatMul's expert factor,
/// rules/matmul_rule.cc); the layout engine moves e's cut onto the tokens' batch with an
/// all-to-all over the expert-parallel group, Megatron-Core's token dispatch:
///   dispatch out [b, E, c, h] split (dp, 1, 1, 1) -> expert linear in (dp/ep, ep, 1, 1)
/// Combine sums each token's expert outputs, so e is a reduction factor: a device holding some
/// experts' outputs leaves partial sums. Megatron-Core instead returns the outputs to their
/// tokens' devices first (the reverse all-to-all), which a strategy with e uncut asks for.

#include "rules/family_rules.h"

namespace autopar::rules {

Expected<ShardingRule> moeRule(const OpTypes& op) {
  if (auto status = expectInputCount(op, 2); !status) return status.error();
  const bool dispatch = op.kind == ir::OpKind::kMoEDispatch;
  if (auto status = expectRank(op, 0, dispatch ? 3 : 4); !status) return status.error();
  if (auto status = expectRank(op, 1, 3); !status) return status.error();
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  const int batch = builder.factor("b", FactorKind::kPassThrough, /*isBatch=*/true);
  const int tokens = builder.factor("s");
  const int hidden = builder.factor("h");
  const int experts =
      builder.factor("e", dispatch ? FactorKind::kNeedReplication : FactorKind::kReduction);
  const std::vector<std::vector<int>> sequence{{batch}, {tokens}, {hidden}};
  const std::vector<std::vector<int>> slots{{batch}, {experts}, {tokens}, {hidden}};
  builder.operand(0, dispatch ? sequence : slots).operand(1, {{batch}, {tokens}, {experts}});
  builder.result(0, dispatch ? slots : sequence);
  return std::move(builder).build();
}

}  // namespace autopar::rules
