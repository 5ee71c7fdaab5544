#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::applyStrategy;
using testing::f32;
using testing::ruleOf;
using testing::strategyError;

TEST(NormRule, LayerNormSharesTheNormalisedDimWithItsWeights) {
  const ShardingRule rule = ruleOf(OpKind::kLayerNorm, {}, {f32({4, 8, 16}), f32({16}), f32({16})});
  EXPECT_EQ(ruleToString(rule),
            "([d0, d1, h], [h], [h]) -> ([d0, d1, h]) batch={d0} need_replication={h}");
  EXPECT_EQ(strategyError(rule, {{1, 1, 2}, {2}, {2}}),
            "inputs[0] dim 2 cuts factor h by 2, but h needs replication");
}

TEST(NormRule, RMSNormHasOneWeight) {
  const ShardingRule rule = ruleOf(OpKind::kRMSNorm, {}, {f32({4, 8, 16}), f32({16})});
  EXPECT_EQ(ruleToString(rule),
            "([d0, d1, h], [h]) -> ([d0, d1, h]) batch={d0} need_replication={h}");
}

TEST(NormRule, DataParallelNormSumsWeightGradients) {
  const ShardingRule rule = ruleOf(OpKind::kRMSNorm, {}, {f32({4, 8, 16}), f32({16})});
  EXPECT_EQ(defaultFactorCuts(rule, 8), (FactorCuts{4, 1, 1}));
  auto op = applyStrategy(rule, {{4, 1, 1}, {1}}, 8);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->matrix.shape(), (std::vector<int64_t>{4, 2}));  // batch, then replicas
  EXPECT_EQ(op->inputGradPartialAxes, (std::vector<std::vector<int>>{{}, {0}}));
  EXPECT_EQ(op->inputs[1].dimAxes, (std::vector<std::vector<int>>{{}}));
}

TEST(NormRule, SequenceCutIsAllowed) {
  const ShardingRule rule = ruleOf(OpKind::kRMSNorm, {}, {f32({4, 8, 16}), f32({16})});
  const auto all = enumerateFactorCuts(rule, 2);
  EXPECT_EQ(all, (std::vector<FactorCuts>{{1, 1, 1}, {1, 2, 1}, {2, 1, 1}}));
}

}  // namespace
}  // namespace autopar::rules
