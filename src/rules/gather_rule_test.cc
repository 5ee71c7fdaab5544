#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::applyStrategy;
using testing::f32;
using testing::i64;
using testing::ruleOf;

ShardingRule embedding() { return ruleOf(OpKind::kGather, {}, {f32({64, 16}), i64({4, 8})}); }

TEST(GatherRule, IndexAndHiddenDimsPassThroughVocabReduces) {
  const ShardingRule rule = embedding();
  EXPECT_EQ(ruleToString(rule), "([v, h], [i0, i1]) -> ([i0, i1, h]) batch={i0} reduction={v}");
}

TEST(GatherRule, VocabParallelOutputIsPartial) {
  auto op = applyStrategy(embedding(), {{4, 1}, {1, 1}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->inputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {}}));
  EXPECT_EQ(op->outputs[0].partialAxes, (std::vector<int>{0}));
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{}, {}, {}}));
  EXPECT_TRUE(op->inputGradPartialAxes[0].empty());
}

TEST(GatherRule, DataParallelTableGradientIsPartial) {
  const ShardingRule rule = embedding();
  EXPECT_EQ(defaultFactorCuts(rule, 8), (FactorCuts{4, 1, 1, 1}));
  auto op = applyStrategy(rule, {{1, 1}, {4, 1}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->inputGradPartialAxes[0], (std::vector<int>{0}));
  EXPECT_TRUE(op->outputs[0].partialAxes.empty());
}

TEST(GatherRule, HiddenCutSplitsTableAndOutput) {
  auto op = applyStrategy(embedding(), {{1, 2}, {2, 1}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  // Factors i0, i1, v, h: i0 on axis 0, h on axis 1.
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {}, {1}}));
  EXPECT_EQ(op->inputs[0].dimAxes, (std::vector<std::vector<int>>{{}, {1}}));
}

}  // namespace
}  // namespace autopar::rules
