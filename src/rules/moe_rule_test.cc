#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::applyStrategy;
using testing::f32;
using testing::partSizes;
using testing::ruleOf;
using testing::strategyError;

ir::OpAttrs topK(int64_t k) {
  ir::OpAttrs attrs;
  attrs.topK = k;
  return attrs;
}

// b = 4, s = 16, h = 8, E = 4, top 2: 8 slots per sample and expert.
ShardingRule dispatch(int64_t k = 2) {
  return ruleOf(OpKind::kMoEDispatch, topK(k), {f32({4, 16, 8}), f32({4, 16, 4})});
}

ShardingRule combine() {
  return ruleOf(OpKind::kMoECombine, topK(2), {f32({4, 4, 8, 8}), f32({4, 16, 4})});
}

TEST(MoERule, DispatchKeepsTheExpertsWhole) {
  const ShardingRule rule = dispatch();
  EXPECT_EQ(ruleToString(rule),
            "([b, s, h], [b, s, e]) -> ([b, e, s, h]) batch={b} need_replication={e}");
  // The token factor is the sequence in the inputs and the slots in the output.
  EXPECT_EQ(partSizes(rule.operands[0][1]), (std::vector<int64_t>{16}));
  EXPECT_EQ(partSizes(rule.results[0][2]), (std::vector<int64_t>{8}));
  EXPECT_EQ(strategyError(rule, {{1, 1, 1}, {1, 1, 2}}),
            "inputs[1] dim 2 cuts factor e by 2, but e needs replication");
}

TEST(MoERule, DispatchedSlotsFollowTheTokens) {
  // Data parallel 2 and the sequence cut by 2 (sequence or context parallelism): each device
  // fills its block of every expert's slots.
  auto op = applyStrategy(dispatch(), {{2, 2, 1}, {2, 2, 1}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {}, {1}, {}}));
  EXPECT_TRUE(op->outputs[0].partialAxes.empty());
  // Top 1 leaves 4 slots per expert: a cut of 8 divides the sequence but not the slots.
  EXPECT_EQ(strategyError(dispatch(1), {{1, 8, 1}, {1, 8, 1}}),
            "outputs[0] dim 2: factor s of size 4 does not divide into 8");
}

TEST(MoERule, CombineOfSomeExpertsIsAPartialSum) {
  const ShardingRule rule = combine();
  EXPECT_EQ(ruleToString(rule), "([b, e, s, h], [b, s, e]) -> ([b, s, h]) batch={b} reduction={e}");
  auto op = applyStrategy(rule, {{1, 2, 1, 1}, {1, 1, 2}}, 2);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->outputs[0].partialAxes, (std::vector<int>{0}));
  // Megatron-Core's order: the expert outputs back on their tokens' devices, then summed there.
  auto local = applyStrategy(rule, {{4, 1, 1, 1}, {4, 1, 1}}, 4);
  ASSERT_TRUE(local.ok()) << local.error().message;
  EXPECT_TRUE(local->outputs[0].partialAxes.empty());
  EXPECT_EQ(local->outputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {}, {}}));
}

}  // namespace
}  // namespace autopar::rules
