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
  EXPECT_EQ(costConstants().matmulEfficiency, constants->matmulEfficiency);
}

TEST(CostConstants, BadFieldsAreNamed) {
  EXPECT_EQ(parseCostConstants("[1]").error().message, "expected a JSON object");
  EXPECT_EQ(parseCostConstants(R"({"matmul_efficiency": 0.7})").error().message,
            "missing field 'attention_efficiency'");
  EXPECT_EQ(parseCostConstants(R"({"matmul_efficiency": 1.5, "attention_efficiency": 0.6,
      "vector_efficiency": 0.2, "memory_efficiency": 0.8, "tile_dim": 128})")
                .error()
                .message,
            "matmul_efficiency: expected a number in (0, 1], got 1.5");
}

}  // namespace
}  // namespace autopar::cost
