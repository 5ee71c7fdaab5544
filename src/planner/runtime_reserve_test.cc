#include <gtest/gtest.h>

#include "cost/constants.h"
#include "planner/configuration_estimate.h"
#include "planner/planner_test_util.h"

namespace autopar::planner {
namespace {

MegatronConfig llama7b() { return testing::llama7bTp2Dp4(1); }

/// Every stage's peak holds the CUDA context, NCCL's buffers for each parallel dimension wider
/// than 1 (here TP and DP) and the allocator's reserve over what the step allocates and frees:
/// not the parameters, the optimizer states or Megatron's contiguous gradient buffer.
TEST(RuntimeReserve, EveryStagePeakHoldsContextNcclAndAllocatorReserve) {
  auto estimate = estimateConfig(llama7b());
  ASSERT_TRUE(estimate) << estimate.error().message;
  const cost::CostConstants& constants = *cost::shippedCostModel();
  const cost::MemoryBreakdown& memory = estimate->evaluated.estimate.peakMemory();
  const int64_t transient =
      memory.activationBytes + memory.workspaceBytes + memory.communicationBytes;
  EXPECT_EQ(memory.runtimeBytes,
            static_cast<int64_t>(constants.cudaContextBytes + 2 * constants.ncclGroupBytes +
                                 constants.allocatorReserve * static_cast<double>(transient)));
  EXPECT_GT(memory.runtimeBytes, int64_t{1} << 30);
  EXPECT_EQ(estimate->peakMemoryBytes.front(), memory.total());
  // Outside a contiguous buffer (FSDP's, DeepSpeed's) the gradients are made every step.
  MegatronConfig staged = llama7b();
  staged.codePath.gradientSyncInPlace = false;
  auto stagedEstimate = estimateConfig(staged);
  ASSERT_TRUE(stagedEstimate);
  const cost::MemoryBreakdown& stagedMemory = stagedEstimate->evaluated.estimate.peakMemory();
  EXPECT_EQ(transientStageBytes(staged.codePath, stagedMemory.total() - stagedMemory.runtimeBytes,
                                stagedMemory.parameterBytes, stagedMemory.gradientBytes,
                                stagedMemory.optimizerBytes),
            stagedMemory.gradientBytes + stagedMemory.activationBytes +
                stagedMemory.workspaceBytes + stagedMemory.communicationBytes);
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

}  // namespace
}  // namespace autopar::planner
