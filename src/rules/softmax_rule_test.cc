#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::f32;
using testing::ruleOf;
using testing::strategyError;

TEST(SoftmaxRule, SoftmaxAxisNeedsReplication) {
  const ShardingRule rule = ruleOf(OpKind::kSoftmax, {}, {f32({8, 4, 16, 16})});
  EXPECT_EQ(ruleToString(rule),
            "([d0, d1, d2, d3]) -> ([d0, d1, d2, d3]) batch={d0} need_replication={d3}");
  EXPECT_EQ(strategyError(rule, {{1, 1, 1, 2}}),
            "inputs[0] dim 3 cuts factor d3 by 2, but d3 needs replication");
}

TEST(SoftmaxRule, AxisZeroIsNotTheBatch) {
  ir::OpAttrs attrs;
  attrs.axis = 0;
  const ShardingRule rule = ruleOf(OpKind::kSoftmax, attrs, {f32({8, 4})});
  EXPECT_EQ(ruleToString(rule), "([d0, d1]) -> ([d0, d1]) need_replication={d0}");
  EXPECT_EQ(defaultFactorCuts(rule, 4), (FactorCuts{1, 1}));
}

TEST(SoftmaxRule, EnumerationNeverCutsTheAxis) {
  const ShardingRule rule = ruleOf(OpKind::kSoftmax, {}, {f32({8, 8})});
  EXPECT_EQ(enumerateFactorCuts(rule, 4), (std::vector<FactorCuts>{{1, 1}, {2, 1}, {4, 1}}));
}

TEST(SoftmaxRule, BadAxisIsReportedWithTheKind) {
  testing::OneOpGraph built = testing::oneOpGraph(OpKind::kSoftmax, {}, {f32({8, 4})});
  ASSERT_GE(built.op, 0);
  built.graph.mutableOp(built.op).attrs.axis = 5;
  auto rule = shardingRuleFor(built.graph, built.graph.op(built.op));
  ASSERT_FALSE(rule.ok());
  EXPECT_EQ(rule.error().message, "Softmax: attrs.axis is 5, expected a value in [-2, 1]");
}

}  // namespace
}  // namespace autopar::rules
