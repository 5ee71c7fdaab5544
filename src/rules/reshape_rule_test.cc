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

ShardingRule reshape(const ir::Shape& from, const ir::Shape& to) {
  ir::OpAttrs attrs;
  attrs.newShape = to;
  return ruleOf(OpKind::kReshape, attrs, {f32(from)});
}

TEST(ReshapeRule, MergingDimsKeepsTheirFactors) {
  const ShardingRule rule = reshape({4, 8, 16}, {32, 16});
  EXPECT_EQ(ruleToString(rule), "([d0, d1, d2]) -> ([(d0, d1), d2]) batch={d0}");
  EXPECT_EQ(partSizes(rule.results[0][0]), (std::vector<int64_t>{4, 8}));
}

TEST(ReshapeRule, SplittingADimGivesItParts) {
  const ShardingRule rule = reshape({32, 16}, {4, 8, 16});
  EXPECT_EQ(ruleToString(rule), "([(d0.0, d0.1), d1]) -> ([d0.0, d0.1, d1]) batch={d0.0}");
  EXPECT_EQ(partSizes(rule.operands[0][0]), (std::vector<int64_t>{4, 8}));
}

TEST(ReshapeRule, OverlappingSplitsDecompose) {
  const ShardingRule rule = reshape({2, 12}, {4, 6});
  EXPECT_EQ(ruleToString(rule), "([d0, (d1.0, d1.1)]) -> ([(d0, d1.0), d1.1]) batch={d0}");
  EXPECT_EQ(partSizes(rule.operands[0][1]), (std::vector<int64_t>{2, 6}));
}

TEST(ReshapeRule, GroupWithoutDecompositionCannotBeCut) {
  const ShardingRule rule = reshape({6, 4}, {4, 6});
  EXPECT_EQ(ruleToString(rule), "([_, _]) -> ([_, _])");
  EXPECT_EQ(strategyError(rule, {{2, 1}}),
            "inputs[0] dim 0 maps to no factor of the op and cannot be cut (cut 2)");
}

TEST(ReshapeRule, SizeOneDimsMapToNothing) {
  const ShardingRule rule = reshape({1, 4, 6}, {4, 6, 1});
  EXPECT_EQ(ruleToString(rule), "([_, d1, d2]) -> ([d1, d2, _])");
}

TEST(ReshapeRule, CutGoesToTheMajorFactorFirst) {
  const ShardingRule rule = reshape({32, 16}, {4, 8, 16});
  auto op = applyStrategy(rule, {{8, 1}}, 8);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->cuts, (FactorCuts{4, 2, 1}));
  EXPECT_EQ(op->inputs[0].dimAxes, (std::vector<std::vector<int>>{{0, 1}, {}}));
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {1}, {}}));
  auto small = factorCutsFromStrategy(rule, {{2, 1}});
  ASSERT_TRUE(small.ok()) << small.error().message;
  EXPECT_EQ(*small, (FactorCuts{2, 1, 1}));
}

TEST(ReshapeRule, CutThatStraddlesFactorsFails) {
  const ShardingRule rule = reshape({24}, {4, 6});
  EXPECT_EQ(strategyError(rule, {{3}}),
            "inputs[0] dim 0 cut 3 does not split along its factors (d0.0 of size 4, d0.1 of "
            "size 6)");
}

TEST(ReshapeRule, MinorFactorIsCutOnlyUnderAWholeMajor) {
  const ShardingRule rule = reshape({24}, {4, 6});
  // d0.0 (4) takes 1, 2 or 4; d0.1 (6) may take 2 only when d0.0 is cut whole.
  EXPECT_EQ(enumerateFactorCuts(rule, 8),
            (std::vector<FactorCuts>{{1, 1}, {2, 1}, {4, 1}, {4, 2}}));
  EXPECT_EQ(applyFactorCuts(rule, {2, 2}, testing::ranks(4)).error().message,
            "inputs[0] dim 0 cuts factor d0.1 by 2 but the major factor d0.0 of size 4 is cut "
            "only by 2; a device's share would not be contiguous");
}

}  // namespace
}  // namespace autopar::rules
