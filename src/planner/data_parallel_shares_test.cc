#include "planner/data_parallel_shares.h"

#include <gtest/gtest.h>

#include "planner/plan_request.h"

namespace autopar::planner {
namespace {

/// The 2-layer LLaMA on 4 cpu-host ranks, TP 2 DP 2, 2 micro-batches.
PlanOptions tensorParallelPlan() {
  PlanOptions options;
  options.model = std::string(AUTOPAR_SOURCE_DIR) + "/examples/models/llama-2layer-h256.json";
  options.cluster = "cpu-host";
  options.devices = 4;
  options.modelOptions.sequence = 128;
  options.modelOptions.parallel = ir::ParallelConfig{.tp = 2};
  options.modelOptions.dataParallelFromDevices = true;
  options.training.microBatches = 2;
  return options;
}

/// Shares of 6 and 2 samples a step are priced as every replica at the larger (3 a micro-batch):
/// the same step and peak as the even plan at micro-batch 3, but the samples trained are 8, not
/// 12, and the plan records the shares and the graph the runtime builds (4 a micro-batch).
TEST(DataParallelShares, PricedAtTheLargestShare) {
  PlanOptions shared = tensorParallelPlan();
  shared.training.dpShares = {6, 2};
  auto planned = planRequest(shared);
  ASSERT_TRUE(planned) << planned.error().message;
  PlanOptions widest = tensorParallelPlan();
  widest.modelOptions.microBatch = 3;
  auto even = planRequest(widest);
  ASSERT_TRUE(even) << even.error().message;
  const plan::EstimateRecord& estimate = planned->plan.estimate;
  EXPECT_DOUBLE_EQ(estimate.stepTimeSeconds, even->plan.estimate.stepTimeSeconds);
  EXPECT_EQ(estimate.peakMemoryBytes, even->plan.estimate.peakMemoryBytes);
  EXPECT_EQ(estimate.samplesPerStep, 8);
  EXPECT_EQ(even->plan.estimate.samplesPerStep, 12);
  EXPECT_NEAR(estimate.tokensPerSecond, even->plan.estimate.tokensPerSecond * 8 / 12, 1e-6);
  EXPECT_EQ(planned->plan.dataParallelShares, (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(planned->plan.setup->gbs, 8);
  // The fingerprint is of the graph holding 4 samples a micro-batch, not the priced 6.
  EXPECT_NE(planned->plan.inputs.modelHash, even->plan.inputs.modelHash);
  PlanOptions whole = tensorParallelPlan();
  whole.modelOptions.microBatch = 2;
  auto four = planRequest(whole);
  ASSERT_TRUE(four) << four.error().message;
  EXPECT_EQ(planned->plan.inputs.modelHash, four->plan.inputs.modelHash);
}

TEST(DataParallelShares, NoSharesChangeNothing) {
  PlanOptions options = tensorParallelPlan();
  auto cluster = loadCluster(options.cluster, options.nodes, options.devices);
  ASSERT_TRUE(cluster);
  auto shared = applyShares(options, *cluster);
  ASSERT_TRUE(shared);
  EXPECT_FALSE(*shared);
  EXPECT_EQ(options.modelOptions.microBatch, 0);
}

}  // namespace
}  // namespace autopar::planner
