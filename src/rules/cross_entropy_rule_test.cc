#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::applyStrategy;
using testing::f32;
using testing::i64;
using testing::ruleOf;

ShardingRule crossEntropy() {
  return ruleOf(OpKind::kCrossEntropy, {}, {f32({4, 8, 64}), i64({4, 8})});
}

TEST(CrossEntropyRule, TokensReduceAndVocabCommunicatesInside) {
  const ShardingRule rule = crossEntropy();
  EXPECT_EQ(ruleToString(rule),
            "([t0, t1, v], [t0, t1]) -> ([]) batch={t0} reduction={t0, t1} internal={v}");
  ASSERT_EQ(rule.internal.size(), 1u);
  const InternalCollective& collective = rule.internal[0];
  EXPECT_EQ(collective.factor, testing::factorNamed(rule, "v"));
  EXPECT_EQ(collective.forwardElements, 3 * 4 * 8);  // max, sum of exp, target logit per token
  EXPECT_EQ(collective.backwardElements, 0);
  EXPECT_EQ(collective.shardedBy, (std::vector<int>{0, 1}));
}

TEST(CrossEntropyRule, VocabParallelLossIsComplete) {
  auto op = applyStrategy(crossEntropy(), {{1, 1, 4}, {1, 1}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->inputs[0].dimAxes, (std::vector<std::vector<int>>{{}, {}, {0}}));
  EXPECT_TRUE(op->outputs[0].partialAxes.empty());
  EXPECT_TRUE(op->outputs[0].dimAxes.empty());
  EXPECT_TRUE(op->inputGradPartialAxes[0].empty());
  EXPECT_EQ(op->factorAxis[2], 0);  // the internal all-reduce runs over axis 0
}

TEST(CrossEntropyRule, DataParallelLossIsAPartialSum) {
  const ShardingRule rule = crossEntropy();
  EXPECT_EQ(defaultFactorCuts(rule, 8), (FactorCuts{4, 1, 1}));
  auto op = applyStrategy(rule, {{4, 1, 1}, {4, 1}}, 8);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->matrix.shape(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(op->outputs[0].partialAxes, (std::vector<int>{0}));
}

}  // namespace
}  // namespace autopar::rules
