#include "cost/compute.h"

#include <gtest/gtest.h>

#include "cost/constants.h"

namespace autopar::cost {
namespace {

const cluster::DeviceSpec kA100{"A100-SXM4-80GB", {}, 0, 0};

ir::Op opOf(ir::OpKind kind) {
  ir::Op op;
  op.kind = kind;
  return op;
}

double fill(double extent, double tileDim) { return extent / (extent + tileDim); }

TEST(ComputeEfficiency, AGemmLosesEfficiencyAlongEachExtent) {
  const CostConstants& constants = costConstants().forDevice(kA100.name);
  const ir::Op matmul = opOf(ir::OpKind::kMatMul);
  const rules::LocalGemm gemm{2048, 9600, 25600};
  EXPECT_DOUBLE_EQ(computeEfficiency(matmul, gemm, kA100),
                   constants.matmulEfficiency * fill(2048, constants.tileDim) *
                       fill(9600, constants.tileDim) * fill(25600, constants.tileDim));
  // A thin depth costs more than the same work in a square GEMM.
  const double thin = computeEfficiency(matmul, rules::LocalGemm{4096, 4096, 256}, kA100);
  const double square = computeEfficiency(matmul, rules::LocalGemm{1024, 1024, 4096}, kA100);
  EXPECT_LT(thin, square);
  // The backward's GEMMs permute the extents and run at the forward's efficiency.
  EXPECT_DOUBLE_EQ(computeEfficiency(matmul, rules::LocalGemm{25600, 2048, 9600}, kA100),
                   computeEfficiency(matmul, gemm, kA100));
  // Without a GEMM shape (not a contraction) the op runs at the plain matmul efficiency.
  EXPECT_DOUBLE_EQ(computeEfficiency(matmul, std::nullopt, kA100), constants.matmulEfficiency);
}

TEST(ComputeEfficiency, OtherFamiliesTakeTheirOwnConstant) {
  const CostConstants& constants = costConstants().forDevice(kA100.name);
  EXPECT_DOUBLE_EQ(computeEfficiency(opOf(ir::OpKind::kFlashAttention), std::nullopt, kA100),
                   constants.attentionEfficiency);
  EXPECT_DOUBLE_EQ(computeEfficiency(opOf(ir::OpKind::kAdd), std::nullopt, kA100),
                   constants.vectorEfficiency);
}

}  // namespace
}  // namespace autopar::cost
