#include <gtest/gtest.h>

#include "cost/constants.h"
#include "planner/configuration/configuration_estimate.h"
#include "planner/configuration/planner_test_util.h"

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

/// The band's verdict against the usable memory: over when even its bottom exceeds it, fits when
/// its top does not, tight between; its width is the measured error of the transient part.
TEST(MemoryBand, VerdictAndWidth) {
  const MemoryBand band{70, 82};
  EXPECT_EQ(band.against(85), MemoryVerdict::kFits);
  EXPECT_EQ(band.against(82), MemoryVerdict::kFits);
  EXPECT_EQ(band.against(80), MemoryVerdict::kTight);
  EXPECT_EQ(band.against(69), MemoryVerdict::kOver);
  cost::CostConstants constants;
  constants.memoryBandBelow = 0.1;
  constants.memoryBandAbove = 0.2;
  const MemoryBand measured = memoryBand(100, 50, constants);
  EXPECT_EQ(measured.lowBytes, 95);
  EXPECT_EQ(measured.highBytes, 110);
}

/// A configuration whose estimate fits with a byte to spare fits under --memory-policy expected
/// and not under safe, whose band's top (the shipped band is measured, not zero) is over.
TEST(MemoryBand, SafePolicyFitsOnTheBandsTop) {
  MegatronConfig config = llama7b();
  auto estimate = estimateConfig(config);
  ASSERT_TRUE(estimate);
  ASSERT_GT(cost::shippedCostModel()->memoryBandAbove, 0);
  config.memoryMarginBytes = estimate->cluster.device.memoryBytes - estimate->peakBytes();
  auto expected = estimateConfig(config);
  ASSERT_TRUE(expected);
  EXPECT_TRUE(expected->fits());
  EXPECT_EQ(expected->verdict(), MemoryVerdict::kTight);
  config.memoryPolicy = ir::MemoryPolicy::kSafe;
  auto safe = estimateConfig(config);
  ASSERT_TRUE(safe);
  EXPECT_FALSE(safe->fits());
  EXPECT_EQ(safe->peakBands.size(), safe->peakMemoryBytes.size());
  EXPECT_LT(safe->peakBands.front().lowBytes, safe->peakMemoryBytes.front());
  EXPECT_GT(safe->peakBands.front().highBytes, safe->peakMemoryBytes.front());
}

}  // namespace
}  // namespace autopar::planner
