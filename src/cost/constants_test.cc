#include "cost/constants.h"

#include <gtest/gtest.h>

#include "cost/cost_model_data.h"

namespace autopar::cost {
namespace {

TEST(CostConstants, CompiledInFileParses) {
  auto constants = parseCostConstants(kCostModelJson);
  ASSERT_TRUE(constants.ok()) << constants.error().message;
  EXPECT_GT(constants->matmulEfficiency, 0);
  EXPECT_LE(constants->matmulEfficiency, 1);
  EXPECT_EQ(shippedCostModel()->matmulEfficiency, constants->matmulEfficiency);
}

TEST(CostConstants, BadFieldsAreNamed) {
  EXPECT_EQ(parseCostConstants("[1]").error().message, "expected a JSON object");
  EXPECT_EQ(parseCostConstants(R"({"matmul_efficiency": 0.7})").error().message,
            "missing field 'fp8_matmul_speedup'");
  EXPECT_EQ(
      parseCostConstants(
          R"({"matmul_efficiency": 1.5, "fp8_matmul_speedup": 1.8, "attention_efficiency": 0.6,
      "vector_efficiency": 0.2, "memory_efficiency": 0.8, "tile_dim": 128,
      "list_collective_copy_seconds": 5e-6, "kernel_launch_seconds": 4e-6, "queued_kernel_seconds": 4e-6, "cuda_context_bytes": 1e9, "nccl_group_bytes": 1e8, "allocator_reserve": 0.05})")
          .error()
          .message,
      "matmul_efficiency: expected a number in (0, 1], got 1.5");
}

TEST(CostConstants, AnArchitecturesOverridesHoldForItsEverySku) {
  const std::string base = R"("matmul_efficiency": 0.7, "fp8_matmul_speedup": 1.8,
      "attention_efficiency": 0.4, "vector_efficiency": 0.2, "memory_efficiency": 0.8,
      "tile_dim": 128, "list_collective_copy_seconds": 5e-6, "kernel_launch_seconds": 4e-6, "queued_kernel_seconds": 4e-6,
      "cuda_context_bytes": 1e9, "nccl_group_bytes": 1e8, "allocator_reserve": 0.05)";
  auto constants = parseCostConstants(
      "{" + base + R"(, "devices": {"H100": {"tile_dim": 256}, "H100-NVL": {"tile_dim": 200}}})");
  ASSERT_TRUE(constants.ok()) << constants.error().message;
  EXPECT_EQ(constants->forDevice("H100-SXM5-80GB").tileDim, 256);
  EXPECT_EQ(constants->forDevice("H100-HBM2e-96GB-500W").tileDim, 256);
  EXPECT_EQ(constants->forDevice("H100-NVL-94GB").tileDim, 200) << "the longest name that fits";
  EXPECT_EQ(constants->forDevice("H100").tileDim, 256);
  EXPECT_EQ(constants->forDevice("H1000-X").tileDim, 128);
  EXPECT_EQ(constants->forDevice("A100-SXM4-80GB").tileDim, 128);
}

TEST(CostConstants, DevicesOverrideSomeConstants) {
  const std::string base =
      R"("matmul_efficiency": 0.7, "fp8_matmul_speedup": 1.8, "attention_efficiency": 0.4,
      "vector_efficiency": 0.2, "memory_efficiency": 0.8, "tile_dim": 128,
      "list_collective_copy_seconds": 5e-6, "kernel_launch_seconds": 4e-6, "queued_kernel_seconds": 4e-6, "cuda_context_bytes": 1e9, "nccl_group_bytes": 1e8, "allocator_reserve": 0.05)";
  auto constants = parseCostConstants(
      "{" + base + R"(, "devices": {"H100-SXM5-80GB": {"attention_efficiency": 0.65}}})");
  ASSERT_TRUE(constants.ok()) << constants.error().message;
  const CostConstants& h100 = constants->forDevice("H100-SXM5-80GB");
  EXPECT_EQ(h100.attentionEfficiency, 0.65);
  EXPECT_EQ(h100.matmulEfficiency, 0.7) << "not overridden";
  EXPECT_EQ(constants->forDevice("A100-SXM4-80GB").attentionEfficiency, 0.4);
  // cuDNN's fused attention has its own efficiency only where the file gives one.
  EXPECT_EQ(constants->forDevice("A100-SXM4-80GB").cudnnAttentionEfficiency, 0);
  auto hopper = parseCostConstants(
      "{" + base + R"(, "devices": {"H100": {"cudnn_attention_efficiency": 0.5}}})");
  ASSERT_TRUE(hopper.ok()) << hopper.error().message;
  EXPECT_EQ(hopper->forDevice("H100-SXM5-80GB").cudnnAttentionEfficiency, 0.5);
  EXPECT_EQ(parseCostConstants("{" + base + R"(, "devices": {"H100": {"tile_dim": -1}}})")
                .error()
                .message,
            "devices.H100: tile_dim: expected a number in (0, 1e+06], got -1");
  EXPECT_EQ(parseCostConstants("{" + base + R"(, "devices": [1]})").error().message,
            "devices: expected an object of device names");
}

}  // namespace
}  // namespace autopar::cost
