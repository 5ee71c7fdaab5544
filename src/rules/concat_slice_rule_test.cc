#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::applyStrategy;
using testing::f32;
using testing::ruleOf;
using testing::strategyError;

ShardingRule concat(int64_t axis, const std::vector<ir::TensorType>& inputs) {
  ir::OpAttrs attrs;
  attrs.axis = axis;
  return ruleOf(OpKind::kConcat, attrs, inputs);
}

TEST(ConcatRule, ConcatAxisMapsToNoFactor) {
  const ShardingRule rule = concat(1, {f32({4, 8}), f32({4, 6})});
  EXPECT_EQ(ruleToString(rule), "([d0, _], [d0, _]) -> ([d0, _]) batch={d0}");
  EXPECT_EQ(strategyError(rule, {{1, 2}, {1, 2}}),
            "inputs[0] dim 1 maps to no factor of the op and cannot be cut (cut 2)");
  auto op = applyStrategy(rule, {{4, 1}, {4, 1}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {}}));
}

TEST(ConcatRule, ConcatOnTheFirstAxisHasNoBatch) {
  const ShardingRule rule = concat(0, {f32({4, 8}), f32({2, 8})});
  EXPECT_EQ(ruleToString(rule), "([_, d1], [_, d1]) -> ([_, d1])");
  EXPECT_EQ(defaultFactorCuts(rule, 4), (FactorCuts{1}));
}

TEST(SliceRule, SlicedDimsMapToNoFactor) {
  ir::OpAttrs attrs;
  attrs.starts = {0, 2};
  attrs.ends = {8, 6};
  const ShardingRule rule = ruleOf(OpKind::kSlice, attrs, {f32({8, 10})});
  EXPECT_EQ(ruleToString(rule), "([d0, _]) -> ([d0, _]) batch={d0}");
  EXPECT_EQ(rule.resultShapes[0], (ir::Shape{8, 4}));
  EXPECT_EQ(strategyError(rule, {{1, 2}}),
            "inputs[0] dim 1 maps to no factor of the op and cannot be cut (cut 2)");
  EXPECT_EQ(enumerateFactorCuts(rule, 4), (std::vector<FactorCuts>{{1}, {2}, {4}}));
}

}  // namespace
}  // namespace autopar::rules
