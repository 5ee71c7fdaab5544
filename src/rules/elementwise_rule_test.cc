#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::applyStrategy;
using testing::f32;
using testing::ruleOf;
using testing::strategyError;

TEST(ElementwiseRule, BinaryBroadcastsOnTheRight) {
  const ShardingRule rule = ruleOf(OpKind::kAdd, {}, {f32({4, 8, 16}), f32({16})});
  EXPECT_EQ(ruleToString(rule), "([d0, d1, d2], [d2]) -> ([d0, d1, d2]) batch={d0}");
}

TEST(ElementwiseRule, SizeOneBroadcastDimMapsToNoFactor) {
  const ShardingRule rule = ruleOf(OpKind::kMul, {}, {f32({4, 8, 16}), f32({4, 1, 16})});
  EXPECT_EQ(ruleToString(rule), "([d0, d1, d2], [d0, _, d2]) -> ([d0, d1, d2]) batch={d0}");
  EXPECT_EQ(strategyError(rule, {{1, 1, 1}, {1, 2, 1}}),
            "inputs[1] dim 1 of size 1 does not divide into 2");
}

TEST(ElementwiseRule, UnaryAndDropoutArePointwise) {
  for (OpKind kind : {OpKind::kReLU, OpKind::kGeLU, OpKind::kDropout, OpKind::kCast}) {
    const ShardingRule rule = ruleOf(kind, {}, {f32({4, 8})});
    EXPECT_EQ(ruleToString(rule), "([d0, d1]) -> ([d0, d1]) batch={d0}") << ir::opKindName(kind);
  }
}

TEST(ElementwiseRule, BiasMustFollowTheCutOfItsDim) {
  const ShardingRule rule = ruleOf(OpKind::kAdd, {}, {f32({4, 8, 16}), f32({16})});
  EXPECT_EQ(strategyError(rule, {{2, 1, 4}, {1}}),
            "inputs[0] dim 2 cuts factor d2 by 4 but inputs[1] dim 0 cuts it by 1");
  auto op = applyStrategy(rule, {{2, 1, 4}, {4}}, 8);
  ASSERT_TRUE(op.ok()) << op.error().message;
  // The bias is used by every row: its gradient sums over the batch's axis.
  EXPECT_EQ(op->inputGradPartialAxes, (std::vector<std::vector<int>>{{}, {0}}));
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {}, {1}}));
}

TEST(ElementwiseRule, DefaultCutsTheFirstDim) {
  const ShardingRule rule = ruleOf(OpKind::kSub, {}, {f32({6, 8}), f32({6, 8})});
  EXPECT_EQ(defaultFactorCuts(rule, 4), (FactorCuts{2, 1}));
  EXPECT_EQ(enumerateFactorCuts(rule, 2), (std::vector<FactorCuts>{{1, 1}, {1, 2}, {2, 1}}));
}

}  // namespace
}  // namespace autopar::rules
