#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::f32;
using testing::partSizes;
using testing::ruleOf;
using testing::strategyError;

TEST(MatMulRule, TwoDimensionalMatMulHasBatchM) {
  const ShardingRule rule = ruleOf(OpKind::kMatMul, {}, {f32({64, 32}), f32({32, 128})});
  EXPECT_EQ(ruleToString(rule), "([m, k], [k, n]) -> ([m, n]) batch={m} reduction={k}");
  EXPECT_EQ(partSizes(rule.operands[0][0]), (std::vector<int64_t>{64}));
  EXPECT_EQ(partSizes(rule.operands[1][1]), (std::vector<int64_t>{128}));
  EXPECT_EQ(rule.operandShapes[0], (ir::Shape{64, 32}));
  EXPECT_EQ(rule.resultShapes[0], (ir::Shape{64, 128}));
  EXPECT_TRUE(rule.internal.empty());
}

TEST(MatMulRule, LeadingDimsOfAAreBatch) {
  const ShardingRule rule = ruleOf(OpKind::kMatMul, {}, {f32({4, 16, 32}), f32({32, 64})});
  EXPECT_EQ(ruleToString(rule), "([b, m, k], [k, n]) -> ([b, m, n]) batch={b} reduction={k}");
  const ShardingRule deeper = ruleOf(OpKind::kMatMul, {}, {f32({4, 2, 16, 32}), f32({32, 64})});
  EXPECT_EQ(ruleToString(deeper),
            "([b0, b1, m, k], [k, n]) -> ([b0, b1, m, n]) batch={b0} reduction={k}");
}

TEST(MatMulRule, TransposesSwapTheMappedDims) {
  ir::OpAttrs attrs;
  attrs.transposeA = true;
  attrs.transposeB = true;
  // A^T: A is [k=32, m=16]; B^T: B is [n=64, k=32].
  const ShardingRule rule = ruleOf(OpKind::kMatMul, attrs, {f32({32, 16}), f32({64, 32})});
  EXPECT_EQ(ruleToString(rule), "([k, m], [n, k]) -> ([m, n]) batch={m} reduction={k}");
  EXPECT_EQ(partSizes(rule.results[0][0]), (std::vector<int64_t>{16}));
  EXPECT_EQ(partSizes(rule.results[0][1]), (std::vector<int64_t>{64}));
  // The strategy still reads per input dim: cutting k means A's dim 0 and B's dim 1.
  auto cuts = factorCutsFromStrategy(rule, {{2, 1}, {1, 2}});
  ASSERT_TRUE(cuts.ok()) << cuts.error().message;
  EXPECT_EQ(*cuts, (FactorCuts{1, 2, 1}));
}

TEST(MatMulRule, BatchMatMulSharesBatchFactors) {
  const ShardingRule rule =
      ruleOf(OpKind::kBatchMatMul, {}, {f32({2, 3, 16, 32}), f32({2, 3, 32, 8})});
  EXPECT_EQ(ruleToString(rule),
            "([b0, b1, m, k], [b0, b1, k, n]) -> ([b0, b1, m, n]) batch={b0} reduction={k}");
  EXPECT_EQ(strategyError(rule, {{2, 1, 1, 1}, {1, 1, 1, 1}}),
            "inputs[0] dim 0 cuts factor b0 by 2 but inputs[1] dim 0 cuts it by 1");
}

// Tokens [b, E, c, h] x the experts' weights [E, h, f]: the expert factor b1 is in both, the
// batch b0 only in the tokens, so expert parallelism splits the weights and data parallelism
// replicates them.
TEST(MatMulRule, BatchMatMulBroadcastsLeadingDimsOfA) {
  const ShardingRule rule =
      ruleOf(OpKind::kBatchMatMul, {}, {f32({2, 8, 16, 32}), f32({8, 32, 64})});
  EXPECT_EQ(ruleToString(rule),
            "([b0, b1, m, k], [b1, k, n]) -> ([b0, b1, m, n]) batch={b0} reduction={k}");
  auto cuts = factorCutsFromStrategy(rule, {{2, 4, 1, 1}, {4, 1, 2}});
  ASSERT_TRUE(cuts.ok()) << cuts.error().message;
  EXPECT_EQ(*cuts, (FactorCuts{2, 4, 1, 1, 2}));
  auto sharded = applyFactorCuts(rule, *cuts, testing::ranks(16));
  ASSERT_TRUE(sharded.ok()) << sharded.error().message;
  // The weights' gradient is summed over b0's axis only: data parallelism over 2, not 8.
  EXPECT_EQ(sharded->inputGradPartialAxes[1], (std::vector<int>{0}));
  EXPECT_EQ(strategyError(rule, {{1, 4, 1, 1}, {2, 1, 1}}),
            "inputs[0] dim 1 cuts factor b1 by 4 but inputs[1] dim 0 cuts it by 2");
}

TEST(MatMulRule, DefaultIsDataParallel) {
  const ShardingRule rule =
      ruleOf(OpKind::kBatchMatMul, {}, {f32({8, 4, 16, 32}), f32({8, 4, 32, 8})});
  EXPECT_EQ(strategyFromFactorCuts(rule, defaultFactorCuts(rule, 16)),
            (layout::Strategy{{8, 1, 1, 1}, {8, 1, 1, 1}}));
}

}  // namespace
}  // namespace autopar::rules
