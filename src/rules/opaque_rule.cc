/// \file
/// Opaque: an op autopar does not understand (an untranslated ONNX op). Nothing is known about how
/// its outputs depend on its inputs, so no dim of either may be cut, and the rule has no factors:
/// every device runs the whole op on whole inputs, as OpenXLA Shardy replicates an op it has no
/// rule for. The generic engine then inserts the redistributions that gather its inputs.
///   Opaque "TopK" x [8,1000], k [1] -> [8,5], [8,5]: "([_, _], [_]) -> ([_, _], [_, _])"

#include "rules/family_rules.h"

namespace autopar::rules {

namespace {

/// One empty factor list per dim: the dims belong to no factor.
std::vector<std::vector<int>> noFactors(const ir::TensorType& type) {
  return std::vector<std::vector<int>>(type.shape.size());
}

}  // namespace

Expected<ShardingRule> opaqueRule(const OpTypes& op) {
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  for (size_t index = 0; index < op.inputs.size(); ++index) {
    builder.operand(static_cast<int>(index), noFactors(op.inputs[index]));
  }
  for (size_t index = 0; index < op.outputs.size(); ++index) {
    builder.result(static_cast<int>(index), noFactors(op.outputs[index]));
  }
  return std::move(builder).build();
}

}  // namespace autopar::rules
