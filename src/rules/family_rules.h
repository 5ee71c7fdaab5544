#pragma once
/// \file
/// Internal to rules. One function per op family, each in rules/<family>_rule.cc; sharding_rule.cc
/// looks up the family of a kind and calls it. Errors from a family do not name the op kind: the
/// dispatcher prefixes it ("Softmax: attrs.axis is 3, expected a value in [-3, 2]").

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/op.h"
#include "ir/tensor.h"
#include "rules/sharding_rule.h"
#include "util/expected.h"

namespace autopar::rules {

/// An op as its rule sees it: kind, attributes and the types of its inputs and outputs.
struct OpTypes {
  ir::OpKind kind;
  const ir::OpAttrs& attrs;
  std::vector<ir::TensorType> inputs;
  std::vector<ir::TensorType> outputs;
};

Expected<ShardingRule> matmulRule(const OpTypes& op);        ///< matmul_rule.cc
Expected<ShardingRule> elementwiseRule(const OpTypes& op);   ///< elementwise_rule.cc
Expected<ShardingRule> softmaxRule(const OpTypes& op);       ///< softmax_rule.cc
Expected<ShardingRule> normRule(const OpTypes& op);          ///< norm_rule.cc
Expected<ShardingRule> reduceRule(const OpTypes& op);        ///< reduce_rule.cc
Expected<ShardingRule> gatherRule(const OpTypes& op);        ///< gather_rule.cc
Expected<ShardingRule> reshapeRule(const OpTypes& op);       ///< reshape_rule.cc
Expected<ShardingRule> transposeRule(const OpTypes& op);     ///< transpose_rule.cc
Expected<ShardingRule> concatRule(const OpTypes& op);        ///< concat_slice_rule.cc
Expected<ShardingRule> sliceRule(const OpTypes& op);         ///< concat_slice_rule.cc
Expected<ShardingRule> attentionRule(const OpTypes& op);     ///< attention_rule.cc
Expected<ShardingRule> rotaryRule(const OpTypes& op);        ///< attention_rule.cc
Expected<ShardingRule> crossEntropyRule(const OpTypes& op);  ///< cross_entropy_rule.cc
Expected<ShardingRule> moeRule(const OpTypes& op);           ///< moe_rule.cc
Expected<ShardingRule> opaqueRule(const OpTypes& op);        ///< opaque_rule.cc

// ---- Helpers shared by the rule files (family_rules.cc). ----

/// "expected 2 inputs, got 1"
Status expectInputCount(const OpTypes& op, size_t count);
/// "inputs[1] must be rank 2, got rank 3"; `minimum` makes it "must have rank >= 2".
Status expectRank(const OpTypes& op, size_t index, size_t rank, bool minimum = false);

/// Maps an axis in [-rank, rank) to [0, rank): "attrs.axis is 3, expected a value in [-3, 2]".
Expected<int64_t> normalizeAxis(std::string_view field, int64_t axis, size_t rank);

/// A readable factor name for one of `count` dims of one kind: "b" when count is 1, else "b0",
/// "b1", ...
std::string indexedName(std::string_view prefix, size_t index, size_t count);

}  // namespace autopar::rules
