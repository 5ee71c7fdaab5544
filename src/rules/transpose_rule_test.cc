#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::applyStrategy;
using testing::f32;
using testing::ruleOf;

ShardingRule transpose(const ir::Shape& shape, std::vector<int64_t> perm) {
  ir::OpAttrs attrs;
  attrs.perm = std::move(perm);
  return ruleOf(OpKind::kTranspose, attrs, {f32(shape)});
}

TEST(TransposeRule, OutputDimsArePermutedFactors) {
  const ShardingRule rule = transpose({4, 8, 16}, {2, 0, 1});
  EXPECT_EQ(ruleToString(rule), "([d0, d1, d2]) -> ([d2, d0, d1]) batch={d0}");
  EXPECT_EQ(rule.resultShapes[0], (ir::Shape{16, 4, 8}));
}

TEST(TransposeRule, CutsFollowTheirDims) {
  auto op = applyStrategy(transpose({4, 8, 16}, {1, 0, 2}), {{2, 4, 1}}, 8);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->inputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {1}, {}}));
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{1}, {0}, {}}));
  EXPECT_TRUE(op->outputs[0].partialAxes.empty());
}

TEST(TransposeRule, EnumerationCountsPerDimCuts) {
  // Three factors of sizes 2, 2, 4 on 2 devices: no cut, or one of the three cut by 2.
  EXPECT_EQ(enumerateFactorCuts(transpose({2, 2, 4}, {2, 1, 0}), 2).size(), 4u);
}

}  // namespace
}  // namespace autopar::rules
