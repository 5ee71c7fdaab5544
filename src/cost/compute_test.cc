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
  const CostConstants& constants = shippedCostModel()->forDevice(kA100.name);
  const ir::Op matmul = opOf(ir::OpKind::kMatMul);
  const rules::LocalGemm gemm{2048, 9600, 25600};
  EXPECT_DOUBLE_EQ(computeEfficiency(matmul, gemm, constants),
                   constants.matmulEfficiency * fill(2048, constants.tileDim) *
                       fill(9600, constants.tileDim) * fill(25600, constants.tileDim));
  // A thin depth costs more than the same work in a square GEMM.
  const double thin = computeEfficiency(matmul, rules::LocalGemm{4096, 4096, 256}, constants);
  const double square = computeEfficiency(matmul, rules::LocalGemm{1024, 1024, 4096}, constants);
  EXPECT_LT(thin, square);
  // The backward's GEMMs permute the extents and run at the forward's efficiency.
  EXPECT_DOUBLE_EQ(computeEfficiency(matmul, rules::LocalGemm{25600, 2048, 9600}, constants),
                   computeEfficiency(matmul, gemm, constants));
  // Without a GEMM shape (not a contraction) the op runs at the plain matmul efficiency.
  EXPECT_DOUBLE_EQ(computeEfficiency(matmul, std::nullopt, constants), constants.matmulEfficiency);
}

TEST(ComputeEfficiency, OtherFamiliesTakeTheirOwnConstant) {
  const CostConstants& constants = shippedCostModel()->forDevice(kA100.name);
  EXPECT_DOUBLE_EQ(computeEfficiency(opOf(ir::OpKind::kFlashAttention), std::nullopt, constants),
                   constants.attentionEfficiency);
  EXPECT_DOUBLE_EQ(computeEfficiency(opOf(ir::OpKind::kAdd), std::nullopt, constants),
                   constants.vectorEfficiency);
}

TEST(ComputeEfficiency, EachAttentionKernelGenerationRunsAtItsOwnShare) {
  const CostConstants& h100 = shippedCostModel()->forDevice("H100-SXM5-80GB");
  ASSERT_GT(h100.flash1AttentionSpeed, 0);
  ASSERT_LT(h100.flash1AttentionSpeed, 1);
  ir::Op flash2 = opOf(ir::OpKind::kFlashAttention);
  ir::Op flash1 = flash2;
  flash1.attrs.flash1Kernel = true;
  ir::Op cudnn = flash2;
  cudnn.attrs.cudnnKernel = true;
  const double second = computeEfficiency(flash2, std::nullopt, h100);
  EXPECT_DOUBLE_EQ(computeEfficiency(flash1, std::nullopt, h100),
                   second * h100.flash1AttentionSpeed);
  // Hopper's own kernel (cuDNN, built as FlashAttention-3 is) outruns both.
  EXPECT_GT(computeEfficiency(cudnn, std::nullopt, h100), second);
  // A cost model without the constant runs the first generation as the second.
  CostConstants without = h100;
  without.flash1AttentionSpeed = 0;
  EXPECT_DOUBLE_EQ(computeEfficiency(flash1, std::nullopt, without), second);
}

TEST(RooflineSeconds, AnFp8GemmTakesItsBf16TwinsTimeOverTheMeasuredSpeedup) {
  ir::Graph graph;
  auto x = graph.addTensor("x", {{4096, 4096}, ir::DType::kBF16}, ir::TensorRole::kInput);
  auto w = graph.addTensor("w", {{4096, 4096}, ir::DType::kBF16}, ir::TensorRole::kParameter);
  ASSERT_TRUE(x.ok() && w.ok());
  ir::OpAttrs fp8;
  fp8.fp8 = true;
  auto bf16Id = graph.addOp("bf16", ir::OpKind::kMatMul, {}, {*x, *w}, {"y"});
  auto fp8Id = graph.addOp("fp8", ir::OpKind::kMatMul, fp8, {*x, *w}, {"y8"});
  ASSERT_TRUE(bf16Id.ok() && fp8Id.ok());
  const rules::LocalGemm gemm{4096, 4096, 4096};
  const double flops = 2.0 * 4096 * 4096 * 4096;
  auto seconds = [&](ir::OpId id, const cluster::DeviceSpec& device) {
    return rooflineSeconds(graph, graph.op(id), flops, 0, gemm,
                           deviceModel(device, *shippedCostModel()));
  };
  // A device with fp8 tensor cores: the measured speed-up, whatever its fp8 peak.
  cluster::DeviceSpec h100{"H100-SXM5-80GB", {}, 0, 0};
  h100.peakFlopsPerSecond = {{cluster::Precision::kBF16, 989e12},
                             {cluster::Precision::kFP8, 1979e12}};
  EXPECT_DOUBLE_EQ(seconds(*bf16Id, h100) / seconds(*fp8Id, h100),
                   shippedCostModel()->forDevice(h100.name).fp8MatmulSpeedup);
  // Without them, the fp8 GEMM runs as the bf16 one.
  cluster::DeviceSpec a100{"A100-SXM4-80GB", {}, 0, 0};
  a100.peakFlopsPerSecond = {{cluster::Precision::kBF16, 312e12}};
  EXPECT_DOUBLE_EQ(seconds(*fp8Id, a100), seconds(*bf16Id, a100));
}

}  // namespace
}  // namespace autopar::cost
