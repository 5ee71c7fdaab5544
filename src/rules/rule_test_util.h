#pragma once
/// \file
/// Test helpers for rules/*_test.cc: one-op graphs built with ir::Graph, and the rule of their op.

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "rules/sharded_op.h"
#include "rules/sharding_rule.h"

namespace autopar::rules::testing {

/// A graph holding one op over fresh inputs named in0, in1, ...; the op is "op", its output "out".
struct OneOpGraph {
  ir::Graph graph{"test"};
  ir::OpId op = -1;
};

inline ir::TensorType f32(ir::Shape shape) { return {std::move(shape), ir::DType::kF32}; }
inline ir::TensorType i64(ir::Shape shape) { return {std::move(shape), ir::DType::kI64}; }

/// Builds the graph; a failure to build is reported and leaves `op` at -1.
inline OneOpGraph oneOpGraph(ir::OpKind kind, const ir::OpAttrs& attrs,
                             const std::vector<ir::TensorType>& inputs) {
  OneOpGraph result;
  std::vector<ir::TensorId> ids;
  for (size_t index = 0; index < inputs.size(); ++index) {
    auto id =
        result.graph.addTensor("in" + std::to_string(index), inputs[index], ir::TensorRole::kInput);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
    if (!id.ok()) return result;
    ids.push_back(*id);
  }
  auto op = result.graph.addOp("op", kind, attrs, ids, {"out"});
  EXPECT_TRUE(op.ok()) << (op.ok() ? "" : op.error().message);
  if (op.ok()) result.op = *op;
  return result;
}

/// The rule of a one-op graph; an empty rule (with a test failure) when it cannot be built.
inline ShardingRule ruleOf(ir::OpKind kind, const ir::OpAttrs& attrs,
                           const std::vector<ir::TensorType>& inputs) {
  OneOpGraph built = oneOpGraph(kind, attrs, inputs);
  if (built.op < 0) return {};
  auto rule = shardingRuleFor(built.graph, built.graph.op(built.op));
  EXPECT_TRUE(rule.ok()) << (rule.ok() ? "" : rule.error().message);
  if (!rule.ok()) return {};
  return std::move(*rule);
}

/// Ranks 0..count-1.
inline std::vector<int> ranks(int count) {
  std::vector<int> result(static_cast<size_t>(count));
  std::iota(result.begin(), result.end(), 0);
  return result;
}

/// The index of the factor called `name`, or -1 (with a test failure).
inline int factorNamed(const ShardingRule& rule, const std::string& name) {
  for (size_t f = 0; f < rule.factors.size(); ++f) {
    if (rule.factors[f].name == name) return static_cast<int>(f);
  }
  ADD_FAILURE() << "no factor named " << name << " in " << ruleToString(rule);
  return -1;
}

/// Sizes of the parts of one dim, major first.
inline std::vector<int64_t> partSizes(const DimFactors& parts) {
  std::vector<int64_t> sizes;
  for (const FactorPart& part : parts) sizes.push_back(part.size);
  return sizes;
}

/// Applies a seeds'-notation strategy; an error's message, or the sharded op.
inline Expected<ShardedOp> applyStrategy(const ShardingRule& rule, const layout::Strategy& strategy,
                                         int numDevices) {
  auto cuts = factorCutsFromStrategy(rule, strategy);
  if (!cuts) return cuts.error();
  return applyFactorCuts(rule, *cuts, ranks(numDevices));
}

/// The error message of a failed strategy conversion, or "" when it succeeded.
inline std::string strategyError(const ShardingRule& rule, const layout::Strategy& strategy) {
  auto cuts = factorCutsFromStrategy(rule, strategy);
  return cuts.ok() ? "" : cuts.error().message;
}

}  // namespace autopar::rules::testing
