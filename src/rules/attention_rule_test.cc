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

// q [2,128,32 heads * 8], k and v [2,128,8 heads * 8] (grouped-query attention).
ShardingRule groupedAttention() {
  ir::OpAttrs attrs;
  attrs.numHeads = 32;
  attrs.numKvHeads = 8;
  return ruleOf(OpKind::kFlashAttention, attrs,
                {f32({2, 128, 256}), f32({2, 128, 64}), f32({2, 128, 64})});
}

TEST(AttentionRule, FactorsOfFlashAttention) {
  const ShardingRule rule = groupedAttention();
  EXPECT_EQ(ruleToString(rule),
            "([b, s, (heads, d)], [b, skv, (heads, d)], [b, skv, (heads, d)]) -> "
            "([b, s, (heads, d)]) batch={b} need_replication={skv, d}");
  EXPECT_EQ(partSizes(rule.operands[0][2]), (std::vector<int64_t>{32, 8}));
  EXPECT_EQ(partSizes(rule.operands[1][2]), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(partSizes(rule.results[0][2]), (std::vector<int64_t>{32, 8}));
}

TEST(AttentionRule, HeadCutSplitsQueryAndKvHeads) {
  auto op = applyStrategy(groupedAttention(), {{1, 1, 4}, {1, 1, 4}, {1, 1, 4}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->inputs[0].sliceShape(), (ir::Shape{2, 128, 64}));  // 8 query heads
  EXPECT_EQ(op->inputs[1].sliceShape(), (ir::Shape{2, 128, 16}));  // 2 kv heads
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{}, {}, {0}}));
  EXPECT_TRUE(op->outputs[0].partialAxes.empty());
}

TEST(AttentionRule, HeadCutMustDivideKvHeads) {
  EXPECT_EQ(strategyError(groupedAttention(), {{1, 1, 16}, {1, 1, 16}, {1, 1, 16}}),
            "inputs[0] dim 2 cuts factor heads by 16 but inputs[1] dim 2 cuts it by 8");
}

TEST(AttentionRule, ContextParallelKeepsKeysWhole) {
  const ShardingRule rule = groupedAttention();
  auto op = applyStrategy(rule, {{1, 4, 1}, {1, 1, 1}, {1, 1, 1}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->inputs[0].dimAxes, (std::vector<std::vector<int>>{{}, {0}, {}}));
  EXPECT_EQ(op->inputs[1].dimAxes, (std::vector<std::vector<int>>{{}, {}, {}}));
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{}, {0}, {}}));
  // K and V are replicated over the sequence axis, so their gradients sum over it.
  EXPECT_EQ(op->inputGradPartialAxes[1], (std::vector<int>{0}));
  EXPECT_EQ(strategyError(rule, {{1, 4, 1}, {1, 4, 1}, {1, 4, 1}}),
            "inputs[1] dim 1 cuts factor skv by 4, but skv needs replication");
}

TEST(AttentionRule, EnumerationCutsHeadsByAtMostTheKvHeads) {
  ir::OpAttrs attrs;
  attrs.numHeads = 4;
  attrs.numKvHeads = 2;
  const ShardingRule rule =
      ruleOf(OpKind::kFlashAttention, attrs, {f32({2, 8, 8}), f32({2, 8, 4}), f32({2, 8, 4})});
  // b in {1,2}, s in {1,2,4}, heads in {1,2}, product dividing 4: 5 with b = 1, 3 with b = 2.
  const auto all = enumerateFactorCuts(rule, 4);
  EXPECT_EQ(all.size(), 8u);
  const int heads = testing::factorNamed(rule, "heads");
  for (const FactorCuts& cuts : all) EXPECT_LE(cuts[heads], 2);
  EXPECT_EQ(defaultFactorCuts(rule, 4), (FactorCuts{2, 1, 1, 1, 1}));
}

TEST(RotaryRule, HeadDimNeedsReplication) {
  ir::OpAttrs attrs;
  attrs.numHeads = 4;
  const ShardingRule rule = ruleOf(OpKind::kRotary, attrs, {f32({2, 16, 32})});
  EXPECT_EQ(ruleToString(rule),
            "([b, s, (heads, d)]) -> ([b, s, (heads, d)]) batch={b} need_replication={d}");
  EXPECT_EQ(strategyError(rule, {{1, 1, 8}}),
            "inputs[0] dim 2 cuts factor d by 2, but d needs replication");
  auto op = applyStrategy(rule, {{2, 1, 4}}, 8);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {}, {1}}));
}

}  // namespace
}  // namespace autopar::rules
