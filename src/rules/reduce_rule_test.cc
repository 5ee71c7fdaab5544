#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::applyStrategy;
using testing::f32;
using testing::ruleOf;
using testing::strategyError;

ir::OpAttrs axes(std::vector<int64_t> reduced, bool keepDims = false) {
  ir::OpAttrs attrs;
  attrs.axes = std::move(reduced);
  attrs.keepDims = keepDims;
  return attrs;
}

TEST(ReduceRule, SumOfLastAxisIsAReduction) {
  const ShardingRule rule = ruleOf(OpKind::kReduceSum, axes({-1}), {f32({4, 8, 16})});
  EXPECT_EQ(ruleToString(rule), "([d0, d1, r2]) -> ([d0, d1]) batch={d0} reduction={r2}");
  auto op = applyStrategy(rule, {{1, 1, 4}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->outputs[0].partialAxes, (std::vector<int>{0}));
}

TEST(ReduceRule, KeepDimsLeavesAFactorlessDim) {
  const ShardingRule rule = ruleOf(OpKind::kReduceMean, axes({1}, true), {f32({4, 8, 16})});
  EXPECT_EQ(ruleToString(rule), "([d0, r1, d2]) -> ([d0, _, d2]) batch={d0} reduction={r1}");
}

TEST(ReduceRule, MaxMayNotBeCutOnReducedAxes) {
  const ShardingRule rule = ruleOf(OpKind::kReduceMax, axes({1}), {f32({4, 8, 16})});
  EXPECT_EQ(ruleToString(rule), "([d0, r1, d2]) -> ([d0, d2]) batch={d0} need_replication={r1}");
  EXPECT_EQ(strategyError(rule, {{1, 2, 1}}),
            "inputs[0] dim 1 cuts factor r1 by 2, but r1 needs replication");
}

TEST(ReduceRule, EmptyAxesReduceEverything) {
  const ShardingRule rule = ruleOf(OpKind::kReduceMean, {}, {f32({4, 8})});
  EXPECT_EQ(ruleToString(rule), "([r0, r1]) -> ([]) reduction={r0, r1}");
  EXPECT_EQ(defaultFactorCuts(rule, 4), (FactorCuts{1, 1}));
  auto op = applyStrategy(rule, {{2, 2}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->outputs[0].partialAxes, (std::vector<int>{0, 1}));
  EXPECT_TRUE(op->outputs[0].dimAxes.empty());
}

}  // namespace
}  // namespace autopar::rules
