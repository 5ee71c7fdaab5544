#include "rules/sharded_op.h"

#include <gtest/gtest.h>

#include "rules/rule_test_util.h"

namespace autopar::rules {
namespace {

using ir::OpKind;
using testing::applyStrategy;
using testing::f32;
using testing::ranks;
using testing::ruleOf;
using testing::strategyError;

// Seed 002's MatMul: X [64,32] x W [32,128].
ShardingRule seedMatMul() { return ruleOf(OpKind::kMatMul, {}, {f32({64, 32}), f32({32, 128})}); }

TEST(ShardedOp, SeedStrategyOnEightDevices) {
  const ShardingRule rule = seedMatMul();
  auto cuts = factorCutsFromStrategy(rule, {{2, 1}, {1, 4}});
  ASSERT_TRUE(cuts.ok()) << cuts.error().message;
  EXPECT_EQ(*cuts, (FactorCuts{2, 1, 4}));  // m, k, n

  auto op = applyFactorCuts(rule, *cuts, ranks(8));
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->matrix.shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(op->replicaAxis, -1);
  EXPECT_EQ(op->factorAxis, (std::vector<int>{0, -1, 1}));
  EXPECT_EQ(op->inputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {}}));
  EXPECT_EQ(op->inputs[0].tensorMap(), (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(op->inputs[1].tensorMap(), (std::vector<int64_t>{-1, 0}));
  EXPECT_EQ(op->outputs[0].shape, (ir::Shape{64, 128}));
  EXPECT_EQ(op->outputs[0].tensorMap(), (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(op->outputs[0].partialAxes.empty());
  EXPECT_DOUBLE_EQ(op->computeFraction, 1.0 / 8);
  // X lacks n (axis 1), W lacks m (axis 0): their gradients are partial over those axes.
  EXPECT_EQ(op->inputGradPartialAxes, (std::vector<std::vector<int>>{{1}, {0}}));
  EXPECT_EQ(strategyFromFactorCuts(rule, *cuts), (layout::Strategy{{2, 1}, {1, 4}}));
}

TEST(ShardedOp, SeedStrategyOnSixteenDevicesAddsInnerReplicas) {
  auto op = applyStrategy(seedMatMul(), {{2, 1}, {1, 4}}, 16);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->matrix.shape(), (std::vector<int64_t>{2, 4, 2}));
  EXPECT_EQ(op->replicaAxis, 2);
  EXPECT_EQ(op->factorAxis, (std::vector<int>{0, -1, 1}));
  EXPECT_EQ(op->inputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {}}));
  EXPECT_EQ(op->inputs[1].dimAxes, (std::vector<std::vector<int>>{{}, {1}}));
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{0}, {1}}));
  // Replicas compute the same gradients: the replica axis is never a partial axis.
  EXPECT_EQ(op->inputGradPartialAxes, (std::vector<std::vector<int>>{{1}, {0}}));
  EXPECT_DOUBLE_EQ(op->computeFraction, 1.0 / 8);
}

TEST(ShardedOp, CutContractionLeavesPartialOutput) {
  auto op = applyStrategy(seedMatMul(), {{1, 4}, {4, 1}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->matrix.shape(), (std::vector<int64_t>{4}));
  EXPECT_EQ(op->outputs[0].partialAxes, (std::vector<int>{0}));
  EXPECT_EQ(op->outputs[0].dimAxes, (std::vector<std::vector<int>>{{}, {}}));
  // k appears in both inputs: neither gradient is partial.
  EXPECT_EQ(op->inputGradPartialAxes, (std::vector<std::vector<int>>{{}, {}}));
}

TEST(ShardedOp, DataParallelCutMakesWeightGradientPartial) {
  auto op = applyStrategy(seedMatMul(), {{2, 2}, {2, 1}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->matrix.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(op->outputs[0].partialAxes, (std::vector<int>{1}));
  EXPECT_EQ(op->inputGradPartialAxes[1], (std::vector<int>{0}));  // W: all-reduce over m's axis
  EXPECT_TRUE(op->inputGradPartialAxes[0].empty());
}

TEST(ShardedOp, ColumnParallelMakesInputGradientPartial) {
  auto op = applyStrategy(seedMatMul(), {{1, 1}, {1, 4}}, 4);
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(op->inputGradPartialAxes[0], (std::vector<int>{0}));
  EXPECT_TRUE(op->inputGradPartialAxes[1].empty());
  EXPECT_TRUE(op->outputs[0].partialAxes.empty());
}

// Megatron's tensor-parallel MLP on X [b,s,h] with tp = 4, data parallel 2, on 8 devices.
TEST(ShardedOp, MegatronColumnAndRowParallel) {
  const ShardingRule rule = ruleOf(OpKind::kMatMul, {}, {f32({2, 16, 32}), f32({32, 128})});
  auto column = applyStrategy(rule, {{1, 1, 1}, {1, 4}}, 8);
  ASSERT_TRUE(column.ok()) << column.error().message;
  EXPECT_EQ(column->matrix.shape(), (std::vector<int64_t>{4, 2}));  // tp, then replicas
  EXPECT_EQ(column->inputGradPartialAxes[0], (std::vector<int>{0}));
  EXPECT_EQ(column->outputs[0].dimAxes, (std::vector<std::vector<int>>{{}, {}, {0}}));
  EXPECT_TRUE(column->outputs[0].partialAxes.empty());

  auto row = applyStrategy(rule, {{1, 1, 4}, {4, 1}}, 8);
  ASSERT_TRUE(row.ok()) << row.error().message;
  EXPECT_EQ(row->outputs[0].partialAxes, (std::vector<int>{0}));
  EXPECT_EQ(row->inputs[0].dimAxes, (std::vector<std::vector<int>>{{}, {}, {0}}));
  EXPECT_EQ(row->inputs[1].dimAxes, (std::vector<std::vector<int>>{{0}, {}}));
  EXPECT_TRUE(row->inputGradPartialAxes[0].empty());

  auto hybrid = applyStrategy(rule, {{2, 1, 1}, {1, 4}}, 8);
  ASSERT_TRUE(hybrid.ok()) << hybrid.error().message;
  EXPECT_EQ(hybrid->replicaAxis, -1);
  EXPECT_EQ(hybrid->inputGradPartialAxes, (std::vector<std::vector<int>>{{1}, {0}}));
}

TEST(ShardedOp, StrategyErrorsNameInputAndDim) {
  const ShardingRule rule = seedMatMul();
  EXPECT_EQ(strategyError(rule, {{1, 2}, {4, 1}}),
            "inputs[0] dim 1 cuts factor k by 2 but inputs[1] dim 0 cuts it by 4");
  EXPECT_EQ(strategyError(rule, {{1, 2}, {1, 1}}),
            "inputs[0] dim 1 cuts factor k by 2 but inputs[1] dim 0 cuts it by 1");
  EXPECT_EQ(strategyError(rule, {{1, 1}, {1, 1, 1}}),
            "inputs[1] has 2 dims but the strategy gives 3");
  EXPECT_EQ(strategyError(rule, {{1, 1}}), "the strategy gives cuts for 1 input but the op has 2");
  EXPECT_EQ(strategyError(rule, {{0, 1}, {1, 1}}),
            "inputs[0] dim 0 has cut 0, expected a positive count");
  const ShardingRule odd = ruleOf(OpKind::kMatMul, {}, {f32({30, 32}), f32({32, 128})});
  EXPECT_EQ(strategyError(odd, {{4, 1}, {1, 1}}),
            "inputs[0] dim 0 of size 30 does not divide into 4");
}

TEST(ShardedOp, DeviceCountErrors) {
  EXPECT_EQ(applyStrategy(seedMatMul(), {{4, 1}, {1, 4}}, 8).error().message,
            "strategy uses 16 devices but the op runs on 8");
  const ShardingRule rule = ruleOf(OpKind::kMatMul, {}, {f32({6, 32}), f32({32, 128})});
  EXPECT_EQ(applyStrategy(rule, {{3, 1}, {1, 1}}, 8).error().message,
            "strategy uses 3 devices, which does not divide the 8 the op runs on");
  EXPECT_EQ(applyFactorCuts(rule, {1, 1, 1}, {}).error().message, "the op runs on no devices");
  EXPECT_EQ(applyFactorCuts(rule, {1, 1}, ranks(2)).error().message,
            "cuts give 2 factors but the rule has 3");
  EXPECT_EQ(applyFactorCuts(rule, {4, 1, 1}, ranks(4)).error().message,
            "inputs[0] dim 0: factor m of size 6 does not divide into 4");
}

TEST(ShardedOp, SingleDeviceHasAnEmptyMatrix) {
  auto op = applyFactorCuts(seedMatMul(), {1, 1, 1}, {3});
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_TRUE(op->matrix.shape().empty());
  EXPECT_EQ(op->matrix.ranks(), (std::vector<int>{3}));
  EXPECT_DOUBLE_EQ(op->computeFraction, 1.0);
}

TEST(ShardedOp, LocalGemmDividesEachExtentByItsCuts) {
  // X [4,16,32] x W [32,64]: factors b, m, k, n; b cut by 2 and n by 4.
  const ShardingRule matmul = ruleOf(OpKind::kMatMul, {}, {f32({4, 16, 32}), f32({32, 64})});
  auto gemm = localGemm(matmul, {2, 1, 1, 4});
  ASSERT_TRUE(gemm.has_value());
  EXPECT_DOUBLE_EQ(gemm->rows, 2 * 16);
  EXPECT_DOUBLE_EQ(gemm->columns, 16);
  EXPECT_DOUBLE_EQ(gemm->depth, 32);
  // Row-parallel: the cut depth shrinks, rows and columns stay whole.
  gemm = localGemm(matmul, {1, 1, 8, 1});
  ASSERT_TRUE(gemm.has_value());
  EXPECT_DOUBLE_EQ(gemm->rows, 4 * 16);
  EXPECT_DOUBLE_EQ(gemm->columns, 64);
  EXPECT_DOUBLE_EQ(gemm->depth, 4);
}

TEST(ShardedOp, LocalGemmCountsSharedBatchAsRows) {
  // A [2,8,16,32] x B [8,32,64]: factors b0 (A only), b1 (both), m, k, n; b1 cut by 2.
  const ShardingRule rule =
      ruleOf(OpKind::kBatchMatMul, {}, {f32({2, 8, 16, 32}), f32({8, 32, 64})});
  auto gemm = localGemm(rule, {1, 2, 1, 1, 1});
  ASSERT_TRUE(gemm.has_value());
  EXPECT_DOUBLE_EQ(gemm->rows, 2 * 4 * 16);
  EXPECT_DOUBLE_EQ(gemm->columns, 64);
  EXPECT_DOUBLE_EQ(gemm->depth, 32);
}

TEST(ShardedOp, LocalGemmNeedsAContraction) {
  const ShardingRule add = ruleOf(OpKind::kAdd, {}, {f32({4, 16}), f32({4, 16})});
  EXPECT_FALSE(localGemm(add, {1, 1}).has_value());
}

TEST(ShardedOp, EnumeratesEveryAssignmentInLexicographicOrder) {
  // m, k, n of size 8 on 4 devices: exponents (a,b,c) of 2 with a+b+c <= 2, C(5,3) = 10.
  const ShardingRule rule = ruleOf(OpKind::kMatMul, {}, {f32({8, 8}), f32({8, 8})});
  const std::vector<FactorCuts> expected{{1, 1, 1}, {1, 1, 2}, {1, 1, 4}, {1, 2, 1}, {1, 2, 2},
                                         {1, 4, 1}, {2, 1, 1}, {2, 1, 2}, {2, 2, 1}, {4, 1, 1}};
  EXPECT_EQ(enumerateFactorCuts(rule, 4), expected);
  EXPECT_TRUE(enumerateFactorCuts(rule, 0).empty());
}

TEST(ShardedOp, EnumerationRespectsDivisibility) {
  // m = 6 takes only 1 or 2 of 4 devices: 6 assignments of (k,n) with m = 1 and 3 with m = 2.
  const ShardingRule rule = ruleOf(OpKind::kMatMul, {}, {f32({6, 8}), f32({8, 8})});
  const auto all = enumerateFactorCuts(rule, 4);
  EXPECT_EQ(all.size(), 9u);
  for (const FactorCuts& cuts : all) EXPECT_NE(cuts[0], 4);
  // 3 devices: only m = 6 divides by 3.
  EXPECT_EQ(enumerateFactorCuts(rule, 3), (std::vector<FactorCuts>{{1, 1, 1}, {3, 1, 1}}));
}

TEST(ShardedOp, DefaultCutsTheBatchByTheLargestDivisor) {
  EXPECT_EQ(defaultFactorCuts(seedMatMul(), 8), (FactorCuts{8, 1, 1}));
  const ShardingRule six = ruleOf(OpKind::kMatMul, {}, {f32({6, 32}), f32({32, 128})});
  EXPECT_EQ(defaultFactorCuts(six, 4), (FactorCuts{2, 1, 1}));
  EXPECT_EQ(defaultFactorCuts(six, 5), (FactorCuts{1, 1, 1}));
  const ShardingRule batched = ruleOf(OpKind::kMatMul, {}, {f32({4, 16, 32}), f32({32, 8})});
  EXPECT_EQ(defaultFactorCuts(batched, 8), (FactorCuts{4, 1, 1, 1}));
}

// Rules with several-factor dims, internal collectives, reductions and broadcasts.
std::vector<ShardingRule> assortedRules() {
  ir::OpAttrs attention;
  attention.numHeads = 4;
  attention.numKvHeads = 2;
  ir::OpAttrs reshape;
  reshape.newShape = {4, 8, 16};
  return {
      ruleOf(OpKind::kMatMul, {}, {f32({4, 16, 32}), f32({32, 8})}),
      ruleOf(OpKind::kReshape, reshape, {f32({32, 16})}),
      ruleOf(OpKind::kFlashAttention, attention, {f32({2, 8, 8}), f32({2, 8, 4}), f32({2, 8, 4})}),
      ruleOf(OpKind::kCrossEntropy, {}, {f32({4, 8, 64}), testing::i64({4, 8})}),
      ruleOf(OpKind::kGather, {}, {f32({64, 16}), testing::i64({4, 8})}),
      ruleOf(OpKind::kAdd, {}, {f32({4, 8, 16}), f32({16})}),
  };
}

// Property: every enumerated assignment survives the round trip through the seeds' notation and
// gives layouts the layout module accepts.
TEST(ShardedOp, EveryEnumeratedCutRoundTripsAndGivesValidLayouts) {
  for (const ShardingRule& rule : assortedRules()) {
    const auto all = enumerateFactorCuts(rule, 8);
    EXPECT_GT(all.size(), 1u) << ruleToString(rule);
    for (const FactorCuts& cuts : all) {
      const layout::Strategy strategy = strategyFromFactorCuts(rule, cuts);
      const std::string context = ruleToString(rule) + " " + layout::strategyToString(strategy);
      auto back = factorCutsFromStrategy(rule, strategy);
      ASSERT_TRUE(back.ok()) << context << ": " << back.error().message;
      EXPECT_EQ(*back, cuts) << context;
      auto op = applyFactorCuts(rule, cuts, ranks(8));
      ASSERT_TRUE(op.ok()) << context << ": " << op.error().message;
      for (const auto* layouts : {&op->inputs, &op->outputs}) {
        for (const layout::TensorLayout& layout : *layouts) {
          auto valid = layout.validate();
          EXPECT_TRUE(valid.ok()) << context << ": " << (valid.ok() ? "" : valid.error().message);
        }
      }
      EXPECT_EQ(op->matrix.numDevices(), 8) << context;
    }
  }
}

}  // namespace
}  // namespace autopar::rules
