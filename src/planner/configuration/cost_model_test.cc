#include <gtest/gtest.h>

#include <memory>

#include "cost/constants.h"
#include "planner/configuration/configuration_estimate.h"
#include "planner/configuration/planner_test_util.h"
#include "planner/plan_evaluation.h"

namespace autopar::planner {
namespace {

MegatronConfig llama7b() { return testing::llama7bTp2Dp4(1); }

/// The shipped constants with every GEMM and attention kernel at half the efficiency and a
/// larger allocator reserve: a user's calibration of a slower software stack.
cost::CostModel slowerModel() {
  auto slower = std::make_shared<cost::CostConstants>(*cost::shippedCostModel());
  auto slow = [](cost::CostConstants& constants) {
    constants.matmulEfficiency /= 2;
    constants.attentionEfficiency /= 2;
    constants.allocatorReserve *= 2;
  };
  slow(*slower);
  for (auto& [device, constants] : slower->devices) slow(constants);
  return slower;
}

// The cost model is a value the request holds: two models price one configuration side by side
// in one process, and pricing with one leaves the other's answer as it was.
TEST(CostModel, OneSetupPricedUnderTwoModelsInOneProcessGetsTwoAnswers) {
  MegatronConfig shipped = llama7b();
  MegatronConfig calibrated = llama7b();
  calibrated.costModel = slowerModel();
  auto first = estimateConfig(shipped);
  auto slower = estimateConfig(calibrated);
  auto again = estimateConfig(shipped);
  ASSERT_TRUE(first && slower && again);
  EXPECT_GT(slower->stepSeconds, first->stepSeconds * 1.3);
  EXPECT_GT(slower->peakBytes(), first->peakBytes()) << "the larger allocator reserve";
  EXPECT_EQ(again->stepSeconds, first->stepSeconds);
  EXPECT_EQ(again->peakBytes(), first->peakBytes());
}

// The op-level plan path takes it too: the same plan options under the two models.
TEST(CostModel, ThePlanVerbsEvaluationPricesWithTheOptionsModel) {
  PlanOptions options;
  options.model = "llama2-7b";
  options.modelOptions.parallel = ir::ParallelConfig{};
  options.modelOptions.parallel->tp = 2;
  options.modelOptions.parallel->dp = 4;
  auto cluster = loadCluster(options.cluster, options.nodes, options.devices);
  ASSERT_TRUE(cluster) << cluster.error().message;
  auto shipped = evaluate(options, *cluster, options.modelOptions);
  options.costModel = slowerModel();
  auto slower = evaluate(options, *cluster, options.modelOptions);
  ASSERT_TRUE(shipped && slower);
  EXPECT_GT(slower->estimate.stepSeconds, shipped->estimate.stepSeconds * 1.3);
}

}  // namespace
}  // namespace autopar::planner
