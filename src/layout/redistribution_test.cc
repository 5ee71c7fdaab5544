#include "layout/redistribution.h"

#include <gtest/gtest.h>

#include "cluster/collective.h"
#include "layout/reference_interpreter_test_util.h"

namespace autopar::layout {
namespace {

constexpr int64_t kElementBytes = 4;

/// Two nodes of 8 devices: a fast intra-node level and a slower network.
cluster::Cluster twoNodeCluster() {
  cluster::Cluster cluster;
  cluster.name = "two-node-test";
  cluster.numDevices = 16;
  cluster.devicesPerNode = 8;
  cluster.levels = {{"nvlink", 8, 300e9, 2e-6}, {"ib", 16, 25e9, 5e-6}};
  return cluster;
}

TensorLayout layoutOf(DeviceMatrix matrix, std::vector<std::vector<int>> dimAxes, ir::Shape shape,
                      std::vector<int> partialAxes = {}) {
  TensorLayout layout;
  layout.deviceMatrix = std::move(matrix);
  layout.dimAxes = std::move(dimAxes);
  layout.shape = std::move(shape);
  layout.partialAxes = std::move(partialAxes);
  return layout;
}

Redistribution planned(const TensorLayout& from, const TensorLayout& to, bool allToAll = false) {
  auto plan = redistribute(from, to, twoNodeCluster(), kElementBytes, {allToAll});
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return plan.ok() ? *plan : Redistribution{};
}

std::vector<std::string> stepNames(const Redistribution& plan) {
  std::vector<std::string> names;
  for (const RedistStep& step : plan.steps) {
    std::string name(primitiveName(step.kind));
    name.append("(").append(std::to_string(step.dim)).append(",");
    name.append(std::to_string(step.axis)).append(")");
    names.push_back(name);
  }
  return names;
}

/// Runs the plan on the reference interpreter and checks the target shards.
void expectReachesTarget(const TensorLayout& from, const TensorLayout& to,
                         const Redistribution& plan) {
  std::mt19937_64 rng(7);
  const testing::Shard full = testing::randomTensor(from.shape, rng);
  const testing::DeviceShards result =
      testing::execute(testing::materialise(full, from, rng), plan.steps);
  EXPECT_EQ(testing::compareWithTarget(result, full, to, from.partialAxes.empty()), "");
}

/// Checks a collective step's price against collectiveCost over the group through device 0.
void expectPricedAs(const RedistStep& step, cluster::Collective collective, int64_t bytes,
                    int64_t sentBytes) {
  const int axes[] = {step.axis};
  const std::vector<int> group = step.matrix.group(0, axes);
  const auto expected = cluster::collectiveCost(twoNodeCluster(), collective, group, bytes);
  EXPECT_GT(step.seconds, 0);
  EXPECT_DOUBLE_EQ(step.seconds, expected.seconds);
  EXPECT_EQ(step.algorithm, cluster::algorithmName(expected.algorithm));
  EXPECT_EQ(step.bytesPerDevice, sentBytes);
}

TEST(Redistribute, RowBlocksToColumnBlocksGathersThenSplits) {
  const TensorLayout rows = layoutOf(DeviceMatrix({2, 4}), {{0}, {}}, {64, 32});
  const TensorLayout columns = layoutOf(DeviceMatrix({2, 4}), {{}, {1}}, {64, 32});
  const Redistribution plan = planned(rows, columns);
  EXPECT_EQ(stepNames(plan), (std::vector<std::string>{"all_gather(0,0)", "split(1,1)"}));
  // Each device holds 32x32 floats = 4096 bytes and gathers 8192 over {0,4}.
  EXPECT_EQ(plan.steps[0].matrix.group(0, std::vector<int>{0}), (std::vector<int>{0, 4}));
  expectPricedAs(plan.steps[0], cluster::Collective::kAllGather, 8192, 4096);
  EXPECT_EQ(plan.steps[1].seconds, 0);
  EXPECT_EQ(plan.steps[1].bytesPerDevice, 0);
  EXPECT_TRUE(plan.steps[1].algorithm.empty());
  EXPECT_DOUBLE_EQ(plan.seconds, plan.steps[0].seconds);
  EXPECT_EQ(plan.bytesPerDevice, 4096);
  expectReachesTarget(rows, columns, plan);
}

TEST(Redistribute, PartialToReplicatedIsAnAllReduce) {
  const TensorLayout partial = layoutOf(DeviceMatrix({2, 4}), {{}, {}}, {16, 8}, {1});
  const TensorLayout replicated = TensorLayout::replicated(DeviceMatrix({2, 4}), {16, 8});
  const Redistribution plan = planned(partial, replicated);
  EXPECT_EQ(stepNames(plan), (std::vector<std::string>{"all_reduce(-1,1)"}));
  // 512 bytes over 4 devices: a ring sends 2*(3/4)*512 = 768 bytes per device.
  expectPricedAs(plan.steps[0], cluster::Collective::kAllReduce, 512, 768);
  expectReachesTarget(partial, replicated, plan);
}

TEST(Redistribute, ScalarPartialSumIsAllReducedOverBothAxes) {
  const TensorLayout partial = layoutOf(DeviceMatrix({2, 4}), {}, {}, {0, 1});
  const TensorLayout replicated = TensorLayout::replicated(DeviceMatrix({2, 4}), {});
  const Redistribution plan = planned(partial, replicated);
  EXPECT_EQ(stepNames(plan), (std::vector<std::string>{"all_reduce(-1,0)", "all_reduce(-1,1)"}));
  expectPricedAs(plan.steps[0], cluster::Collective::kAllReduce, 4, 4);
  expectReachesTarget(partial, replicated, plan);
}

TEST(Redistribute, PartialToRowShardedIsAReduceScatter) {
  const TensorLayout partial = layoutOf(DeviceMatrix({2, 4}), {{}, {}}, {16, 8}, {1});
  const TensorLayout rows = layoutOf(DeviceMatrix({2, 4}), {{1}, {}}, {16, 8});
  const Redistribution plan = planned(partial, rows);
  EXPECT_EQ(stepNames(plan), (std::vector<std::string>{"reduce_scatter(0,1)"}));
  expectPricedAs(plan.steps[0], cluster::Collective::kReduceScatter, 512, 384);
  expectReachesTarget(partial, rows, plan);
}

// Expert outputs [b, E, c] split over experts on axis 0 and partial over axis 1 (a row-parallel
// expert linear), to the tokens' layout: b on axis 0, c on axis 1. The partial sums are
// reduce-scattered first, so the all-to-all moves the reduced half (Megatron-Core's combine).
TEST(Redistribute, ReduceScattersBeforeMoving) {
  const TensorLayout experts = layoutOf(DeviceMatrix({2, 2}), {{}, {0}, {}}, {4, 4, 8}, {1});
  const TensorLayout tokens = layoutOf(DeviceMatrix({2, 2}), {{0}, {}, {1}}, {4, 4, 8});
  const Redistribution plan = planned(experts, tokens, /*allToAll=*/true);
  EXPECT_EQ(stepNames(plan), (std::vector<std::string>{"reduce_scatter(2,1)", "all_to_all(1,0)"}));
  // The all-to-all moves half of the reduced slice: 4 x 2 x 4 floats, 64 bytes.
  expectPricedAs(plan.steps[1], cluster::Collective::kAllToAll, 64, 64);
  expectReachesTarget(experts, tokens, plan);
}

TEST(Redistribute, KeepsPartialAxesTheTargetKeeps) {
  const TensorLayout from = layoutOf(DeviceMatrix({2, 4}), {{1}, {}}, {16, 8}, {0});
  const TensorLayout to = layoutOf(DeviceMatrix({2, 4}), {{}, {1}}, {16, 8}, {0});
  const Redistribution plan = planned(from, to);
  EXPECT_EQ(stepNames(plan), (std::vector<std::string>{"all_gather(0,1)", "split(1,1)"}));
  expectReachesTarget(from, to, plan);
}

TEST(Redistribute, IdentityHasNoSteps) {
  const TensorLayout rows = layoutOf(DeviceMatrix({2, 4}), {{0}, {1}}, {64, 32}, {});
  const Redistribution plan = planned(rows, rows);
  EXPECT_TRUE(plan.empty());
  EXPECT_EQ(plan.seconds, 0);
  EXPECT_EQ(plan.bytesPerDevice, 0);
  // A unit axis changes nothing either.
  const TensorLayout withUnitAxis = layoutOf(DeviceMatrix({2, 1, 4}), {{0}, {2}}, {64, 32}, {1});
  EXPECT_TRUE(planned(rows, withUnitAxis).empty());
}

TEST(Redistribute, UsesAllToAllOnlyWhenEnabled) {
  const TensorLayout rows = layoutOf(DeviceMatrix({8}), {{0}, {}}, {64, 32});
  const TensorLayout columns = layoutOf(DeviceMatrix({8}), {{}, {0}}, {64, 32});
  EXPECT_EQ(stepNames(planned(rows, columns)),
            (std::vector<std::string>{"all_gather(0,0)", "split(1,0)"}));
  const Redistribution plan = planned(rows, columns, /*allToAll=*/true);
  ASSERT_EQ(plan.steps.size(), 1U);
  const RedistStep& step = plan.steps[0];
  EXPECT_EQ(step.kind, PrimitiveKind::kAllToAll);
  EXPECT_EQ(step.dim, 0);
  EXPECT_EQ(step.splitDim, 1);
  // Each device holds 8x32 floats = 1024 bytes and keeps 1/8 of them.
  expectPricedAs(step, cluster::Collective::kAllToAll, 896, 896);
  expectReachesTarget(rows, columns, plan);
}

TEST(Redistribute, GathersUnwantedAxesFirstToFreeDimsForAllToAll) {
  // Dim 0 holds axis 0, which the target wants on dim 1; dim 1 holds axis 1, which nobody wants.
  const TensorLayout from = layoutOf(DeviceMatrix({2, 4}), {{0}, {1}}, {8, 8});
  const TensorLayout to = layoutOf(DeviceMatrix({2, 4}), {{}, {0}}, {8, 8});
  EXPECT_EQ(stepNames(planned(from, to)),
            (std::vector<std::string>{"all_gather(0,0)", "all_gather(1,1)", "split(1,0)"}));
  const Redistribution plan = planned(from, to, /*allToAll=*/true);
  EXPECT_EQ(stepNames(plan), (std::vector<std::string>{"all_gather(1,1)", "all_to_all(0,0)"}));
  EXPECT_EQ(plan.steps[1].splitDim, 1);
  expectReachesTarget(from, to, plan);
}

TEST(Redistribute, RefinesDifferentMatricesOverTheSameRanks) {
  // [4,2] rows on axis 0 to [2,4] rows on axis 0: only the inner half of the old axis moves.
  const TensorLayout from = layoutOf(DeviceMatrix({4, 2}), {{0}, {}}, {8, 4});
  const TensorLayout to = layoutOf(DeviceMatrix({2, 4}), {{0}, {1}}, {8, 4});
  const Redistribution plan = planned(from, to);
  EXPECT_EQ(stepNames(plan),
            (std::vector<std::string>{"all_gather(0,1)", "split(1,1)", "split(1,2)"}));
  for (const RedistStep& step : plan.steps) EXPECT_EQ(step.matrix, DeviceMatrix({2, 2, 2}));
  expectReachesTarget(from, to, plan);
}

TEST(Redistribute, FallsBackToReplicationWithoutACommonRefinement) {
  const TensorLayout from = layoutOf(DeviceMatrix({2, 3}), {{0}, {1}}, {6, 6});
  const TensorLayout to = layoutOf(DeviceMatrix({3, 2}), {{0}, {1}}, {6, 6});
  const Redistribution plan = planned(from, to);
  EXPECT_EQ(stepNames(plan), (std::vector<std::string>{"all_gather(0,0)", "all_gather(1,1)",
                                                       "split(0,0)", "split(1,1)"}));
  EXPECT_EQ(plan.steps[0].matrix, DeviceMatrix({2, 3}));
  EXPECT_EQ(plan.steps[3].matrix, DeviceMatrix({3, 2}));
  expectReachesTarget(from, to, plan);
}

TEST(Redistribute, FallsBackWhenRanksAreReordered) {
  const TensorLayout from = layoutOf(DeviceMatrix({4}, {0, 1, 2, 3}), {{0}}, {8}, {});
  const TensorLayout to = layoutOf(DeviceMatrix({2, 2}, {3, 2, 1, 0}), {{0}}, {8}, {1});
  const Redistribution plan = planned(from, to);
  EXPECT_EQ(stepNames(plan),
            (std::vector<std::string>{"all_gather(0,0)", "split(0,0)", "make_partial(-1,1)"}));
  EXPECT_EQ(plan.steps[0].matrix, DeviceMatrix({4}));
  EXPECT_EQ(plan.steps[1].matrix, DeviceMatrix({2, 2}, {3, 2, 1, 0}));
  expectReachesTarget(from, to, plan);
}

TEST(Redistribute, MakePartialIsLocal) {
  const TensorLayout replicated = TensorLayout::replicated(DeviceMatrix({2, 4}), {8});
  const TensorLayout partial = layoutOf(DeviceMatrix({2, 4}), {{}}, {8}, {0, 1});
  const Redistribution plan = planned(replicated, partial);
  EXPECT_EQ(stepNames(plan),
            (std::vector<std::string>{"make_partial(-1,0)", "make_partial(-1,1)"}));
  EXPECT_EQ(plan.seconds, 0);
  expectReachesTarget(replicated, partial, plan);
}

TEST(Redistribute, StepToStringNamesKindDimAxisAndCost) {
  const TensorLayout rows = layoutOf(DeviceMatrix({8}), {{0}, {}}, {64, 32});
  const TensorLayout columns = layoutOf(DeviceMatrix({8}), {{}, {0}}, {64, 32});
  const Redistribution plan = planned(rows, columns, /*allToAll=*/true);
  const std::string text = plan.steps.at(0).toString();
  EXPECT_EQ(text.rfind("all_to_all dim 0->1 axis 0 (8 devices) of [8] (896 bytes/device, ", 0), 0U)
      << text;
  EXPECT_EQ(planned(rows, columns).steps.at(1).toString(), "split dim 1 axis 0 (8 devices) of [8]");
}

TEST(Redistribute, StepToStringCountsAxesFromTheRightAsTensorMapsDo) {
  // Tensor map [1,-1] on [2,4] cuts dim 0 over the 2-device axis (1 from the right); [-1,0] cuts
  // dim 1 over the 4-device axis.
  const TensorLayout rows = layoutOf(DeviceMatrix({2, 4}), {{0}, {}}, {64, 32});
  const TensorLayout columns = layoutOf(DeviceMatrix({2, 4}), {{}, {1}}, {64, 32});
  ASSERT_EQ(rows.tensorMap(), (std::vector<int64_t>{1, -1}));
  ASSERT_EQ(columns.tensorMap(), (std::vector<int64_t>{-1, 0}));
  const Redistribution plan = planned(rows, columns);
  ASSERT_EQ(plan.steps.size(), 2U);
  EXPECT_EQ(plan.steps[0].toString().rfind("all_gather dim 0 axis 1 (2 devices) of [2,4] (", 0), 0U)
      << plan.steps[0].toString();
  EXPECT_EQ(plan.steps[1].toString(), "split dim 1 axis 0 (4 devices) of [2,4]");
}

TEST(Redistribute, PaddedStorageGathersToTheRealShape) {
  // A [6, 32] tensor stored cut 4 ways on dim 0 is padded to [8, 32] (2 rows per device), as the
  // distributed optimizer and ZeRO pad their flat buffers: the gather moves the padded rows.
  const TensorLayout padded = layoutOf(DeviceMatrix({2, 4}), {{1}, {}}, {8, 32});
  const TensorLayout whole = TensorLayout::replicated(DeviceMatrix({2, 4}), {6, 32});
  const Redistribution gather = planned(padded, whole);
  EXPECT_EQ(stepNames(gather), (std::vector<std::string>{"all_gather(0,1)"}));
  expectPricedAs(gather.steps[0], cluster::Collective::kAllGather, 8 * 32 * kElementBytes,
                 6 * 32 * kElementBytes);
  // Gradients reduce-scatter the other way, into the padded slices.
  const TensorLayout partial = layoutOf(DeviceMatrix({2, 4}), {{}, {}}, {6, 32}, {1});
  EXPECT_EQ(stepNames(planned(partial, padded)), (std::vector<std::string>{"reduce_scatter(0,1)"}));
  // Padding is less than one row per cut: [12, 32] is not [6, 32] padded.
  auto tooMuch = redistribute(layoutOf(DeviceMatrix({2, 4}), {{1}, {}}, {12, 32}), whole,
                              twoNodeCluster(), kElementBytes);
  ASSERT_FALSE(tooMuch.ok());
  EXPECT_EQ(tooMuch.error().message,
            "redistribution: source shape [12,32] differs from target shape [6,32]");
}

TEST(Redistribute, ListCollectivesPayOneCopyPerRank) {
  const TensorLayout rows = layoutOf(DeviceMatrix({2, 4}), {{1}, {}}, {64, 32});
  const TensorLayout whole = TensorLayout::replicated(DeviceMatrix({2, 4}), {64, 32});
  const Redistribution flat = planned(rows, whole);
  RedistributionOptions options;
  options.perRankCopySeconds = 5e-6;
  auto list = redistribute(rows, whole, twoNodeCluster(), kElementBytes, options);
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_DOUBLE_EQ(list->seconds, flat.seconds + 4 * 5e-6);
}

TEST(Redistribute, RejectsMismatchedInputs) {
  const cluster::Cluster cluster = twoNodeCluster();
  const TensorLayout rows = layoutOf(DeviceMatrix({2, 4}), {{0}, {}}, {64, 32});
  auto shapes = redistribute(rows, layoutOf(DeviceMatrix({2, 4}), {{0}, {}}, {64, 16}), cluster, 4);
  ASSERT_FALSE(shapes.ok());
  EXPECT_EQ(shapes.error().message,
            "redistribution: source shape [64,32] differs from target shape [64,16]");

  auto ranks = redistribute(
      rows, layoutOf(DeviceMatrix({8}, {0, 1, 2, 3, 4, 5, 6, 9}), {{0}, {}}, {64, 32}), cluster, 4);
  ASSERT_FALSE(ranks.ok());
  EXPECT_EQ(ranks.error().message,
            "redistribution: source and target cover different ranks: rank 7 is only in the "
            "source");

  auto invalid = redistribute(layoutOf(DeviceMatrix({2, 4}), {{1}, {}}, {6, 32}), rows, cluster, 4);
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().message,
            "redistribution source layout: dim 0 of size 6 does not divide into 4 parts");

  auto invalidTarget =
      redistribute(rows, layoutOf(DeviceMatrix({2, 4}), {{0}, {0}}, {64, 32}), cluster, 4);
  ASSERT_FALSE(invalidTarget.ok());
  EXPECT_EQ(invalidTarget.error().message,
            "redistribution target layout: dim 1: axis 0 is already used by dim 0");

  auto elementBytes = redistribute(rows, rows, cluster, 0);
  ASSERT_FALSE(elementBytes.ok());
  EXPECT_EQ(elementBytes.error().message, "redistribution: elementBytes must be positive, got 0");

  const TensorLayout wide = layoutOf(DeviceMatrix({32}), {{0}, {}}, {64, 32});
  auto tooManyRanks = redistribute(wide, wide, cluster, 4);
  ASSERT_FALSE(tooManyRanks.ok());
  EXPECT_EQ(tooManyRanks.error().message,
            "redistribution: rank 16 is not in cluster 'two-node-test' of 16 devices");
}

TEST(PrimitiveName, NamesEveryKind) {
  EXPECT_EQ(primitiveName(PrimitiveKind::kSplit), "split");
  EXPECT_EQ(primitiveName(PrimitiveKind::kAllGather), "all_gather");
  EXPECT_EQ(primitiveName(PrimitiveKind::kAllToAll), "all_to_all");
  EXPECT_EQ(primitiveName(PrimitiveKind::kReduceScatter), "reduce_scatter");
  EXPECT_EQ(primitiveName(PrimitiveKind::kAllReduce), "all_reduce");
  EXPECT_EQ(primitiveName(PrimitiveKind::kMakePartial), "make_partial");
}

}  // namespace
}  // namespace autopar::layout
