#include "rules/sharding_rule.h"

#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using testing::f32;
using testing::partSizes;

TEST(ShardingRuleBuilder, SingleFactorDimsTakeTheDimSize) {
  ShardingRuleBuilder builder({f32({64, 32}), f32({32, 128})}, {f32({64, 128})});
  const int m = builder.factor("m", FactorKind::kPassThrough, /*isBatch=*/true);
  const int k = builder.factor("k", FactorKind::kReduction);
  const int n = builder.factor("n");
  builder.operand(0, {{m}, {k}}).operand(1, {{k}, {n}}).result(0, {{m}, {n}});
  const ShardingRule rule = std::move(builder).build();
  EXPECT_EQ(ruleToString(rule), "([m, k], [k, n]) -> ([m, n]) batch={m} reduction={k}");
  EXPECT_EQ(partSizes(rule.operands[1][1]), (std::vector<int64_t>{128}));
  EXPECT_EQ(rule.operandShapes, (std::vector<ir::Shape>{{64, 32}, {32, 128}}));
  EXPECT_EQ(rule.resultShapes, (std::vector<ir::Shape>{{64, 128}}));
}

TEST(ShardingRuleBuilder, SeveralFactorsInADimReuseKnownSizes) {
  ShardingRuleBuilder builder({f32({2, 16, 32})}, {f32({2, 16, 4, 8})});
  const int b = builder.factor("b");
  const int s = builder.factor("s");
  const int h = builder.factor("h");
  const int d = builder.factor("d");
  builder.result(0, {{b}, {s}, {h}, {d}}).operand(0, {{b}, {s}, {h, d}});
  const ShardingRule rule = std::move(builder).build();
  EXPECT_EQ(ruleToString(rule), "([b, s, (h, d)]) -> ([b, s, h, d])");
  EXPECT_EQ(partSizes(rule.operands[0][2]), (std::vector<int64_t>{4, 8}));
}

TEST(ShardingRuleBuilder, UnknownPartTakesTheRestOfTheDim) {
  ShardingRuleBuilder builder({f32({6})}, {f32({24})});
  const int a = builder.factor("a");
  const int b = builder.factor("b");
  builder.operand(0, {{a}}).result(0, {{a, b}});
  const ShardingRule rule = std::move(builder).build();
  EXPECT_EQ(ruleToString(rule), "([a]) -> ([(a, b)])");
  EXPECT_EQ(partSizes(rule.results[0][0]), (std::vector<int64_t>{6, 4}));
}

TEST(ShardingRuleBuilder, ExplicitPartsAndInternalCollectives) {
  ShardingRuleBuilder builder({f32({8, 4})}, {f32({})});
  const int t = builder.factor("t", FactorKind::kReduction, /*isBatch=*/true);
  const int v = builder.factor("v");
  builder.operandParts(0, {{FactorPart{t, 8}}, {FactorPart{v, 4}}}).resultParts(0, {});
  builder.internal(InternalCollective{v, 24, 0, {t}});
  const ShardingRule rule = std::move(builder).build();
  EXPECT_EQ(ruleToString(rule), "([t, v]) -> ([]) batch={t} reduction={t} internal={v}");
  EXPECT_EQ(rule.internal[0].shardedBy, (std::vector<int>{t}));
}

TEST(PointwiseRule, BroadcastAndBatch) {
  const ShardingRule rule = pointwiseRule({f32({8, 1, 16}), f32({16})}, f32({8, 4, 16}));
  EXPECT_EQ(ruleToString(rule), "([d0, _, d2], [d2]) -> ([d0, d1, d2]) batch={d0}");
  const ShardingRule noBatch = pointwiseRule({f32({8})}, f32({8}), /*firstIsBatch=*/false);
  EXPECT_EQ(ruleToString(noBatch), "([d0]) -> ([d0])");
  const ShardingRule scalar = pointwiseRule({f32({})}, f32({}));
  EXPECT_EQ(ruleToString(scalar), "([]) -> ([])");
  EXPECT_TRUE(scalar.factors.empty());
}

}  // namespace
}  // namespace autopar::rules
