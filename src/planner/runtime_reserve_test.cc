#include <gtest/gtest.h>

#include "cost/constants.h"
#include "planner/configuration_estimate.h"

namespace autopar::planner {
namespace {

MegatronConfig llama7b() {
  MegatronConfig config;
  config.model = "llama2-7b";
  config.tp = 2;
  config.dp = 4;
  config.gbs = 32;
  config.zero = 1;
  return config;
}

/// Every stage's peak holds the CUDA context, NCCL's buffers for each parallel dimension wider
/// than 1 (here TP and DP) and the allocator's reserve over the tensors.
TEST(RuntimeReserve, EveryStagePeakHoldsContextNcclAndAllocatorReserve) {
  auto estimate = estimateConfig(llama7b());
  ASSERT_TRUE(estimate) << estimate.error().message;
  const cost::CostConstants& constants = cost::costConstants();
  const cost::MemoryBreakdown& memory = estimate->evaluated.estimate.peakMemory();
  const int64_t tensors = memory.total() - memory.runtimeBytes;
  EXPECT_EQ(memory.runtimeBytes,
            static_cast<int64_t>(constants.cudaContextBytes + 2 * constants.ncclGroupBytes +
                                 constants.allocatorReserve * static_cast<double>(tensors)));
  EXPECT_GT(memory.runtimeBytes, int64_t{1} << 30);
  EXPECT_EQ(estimate->peakMemoryBytes.front(), memory.total());
}

/// --memory-margin keeps memory free: a configuration that fits with a few GiB to spare stops
/// fitting when the margin is larger than what it spares.
TEST(RuntimeReserve, MemoryMarginKeepsDeviceMemoryFree) {
  MegatronConfig config = llama7b();
  auto estimate = estimateConfig(config);
  ASSERT_TRUE(estimate);
  ASSERT_TRUE(estimate->fits());
  const int64_t spare = estimate->cluster.device.memoryBytes - estimate->peakMemoryBytes.front();
  config.memoryMarginBytes = spare - 1;
  EXPECT_TRUE(estimateConfig(config)->fits());
  config.memoryMarginBytes = spare + 1;
  EXPECT_FALSE(estimateConfig(config)->fits());
}

/// The tensors' budget is the inverse of the reserve: the budget and its reserve fill the usable
/// memory to the byte, one byte more does not fit, and a reserve over the memory leaves nothing.
TEST(RuntimeReserve, TensorBudgetLeavesRoomForTheReserve) {
  const MegatronConfig config = llama7b();
  const int64_t usable = int64_t{80} << 30;
  const int64_t budget = tensorBudgetBytes(config, usable);
  EXPECT_LE(budget + runtimeReserveBytes(config, budget), usable);
  EXPECT_GT(budget + 1 + runtimeReserveBytes(config, budget + 1), usable);
  EXPECT_LT(budget, usable - (int64_t{1} << 30));
  EXPECT_EQ(tensorBudgetBytes(config, runtimeReserveBytes(config, 0)), 0);
}

}  // namespace
}  // namespace autopar::planner
