#include "cost/compute.h"

#include <algorithm>
#include <cmath>

namespace autopar::cost {

namespace {

/// Large bf16/fp16 GEMMs reach 75-85% of dense peak on A100 and H100 (NVIDIA, "Matrix
/// Multiplication Background User's Guide", GEMM performance figures). 0.75 is the low end;
/// issue 6's calibration against calibration.jsonl refines it.
constexpr double kMatMulEfficiency = 0.75;
/// FlashAttention-2 reaches 50-73% of peak forward and 63% backward on A100 (Dao 2023, Sec. 4.1).
constexpr double kAttentionEfficiency = 0.6;
/// Vector (non-tensor-core) FLOPs of elementwise, norm and softmax kernels rarely matter: those ops
/// are memory bound. A quarter of peak stands in for the vector units' share of the device.
constexpr double kVectorEfficiency = 0.25;
/// Streaming kernels reach ~85% of HBM bandwidth (A100: ~1.7 of 2.0 TB/s in STREAM-like copies).
constexpr double kMemoryEfficiency = 0.85;
/// GEMMs below a few tile widths underfill the device: efficiency follows d / (d + kTileDim) with
/// d the cube root of the per-device multiply-adds (a square-equivalent dimension). 128 is the
/// tensor-core tile edge cuBLAS uses for large problems, so a 128^3 GEMM runs at half efficiency.
constexpr double kTileDim = 128.0;

bool isTensorCoreKind(ir::OpFamily family) {
  return family == ir::OpFamily::kMatMul || family == ir::OpFamily::kAttention;
}

}  // namespace

cluster::Precision precisionOf(const ir::Graph& graph, const ir::Op& op) {
  for (ir::TensorId input : op.inputs) {
    switch (graph.tensor(input).type.dtype) {
      case ir::DType::kBF16:
        return cluster::Precision::kBF16;
      case ir::DType::kF16:
        return cluster::Precision::kF16;
      case ir::DType::kFP8:
        return cluster::Precision::kFP8;
      case ir::DType::kF32:
        return cluster::Precision::kF32;
      default:
        continue;
    }
  }
  return cluster::Precision::kF32;
}

double computeEfficiency(const ir::Graph& graph, const ir::Op& op, double computeFraction) {
  const ir::OpFamily family = ir::familyOf(op.kind);
  if (!isTensorCoreKind(family)) return kVectorEfficiency;
  const double base = family == ir::OpFamily::kAttention ? kAttentionEfficiency : kMatMulEfficiency;
  const double multiplyAdds = graph.forwardFlops(op) * computeFraction / 2.0;
  const double dim = std::cbrt(std::max(multiplyAdds, 1.0));
  return base * dim / (dim + kTileDim);
}

namespace {
double peakFor(const cluster::DeviceSpec& device, cluster::Precision precision) {
  auto it = device.peakFlopsPerSecond.find(precision);
  if (it != device.peakFlopsPerSecond.end() && it->second > 0) return it->second;
  // A precision the device has no quoted peak for runs at its bf16 rate (fp8 on A100 falls back).
  it = device.peakFlopsPerSecond.find(cluster::Precision::kBF16);
  if (it != device.peakFlopsPerSecond.end() && it->second > 0) return it->second;
  double best = 0;
  for (const auto& [unused, peak] : device.peakFlopsPerSecond) best = std::max(best, peak);
  return best;
}
}  // namespace

double rooflineSeconds(const ir::Graph& graph, const ir::Op& op, double flops, double bytes,
                       double computeFraction, const cluster::DeviceSpec& device) {
  double computeSeconds = 0;
  if (flops > 0) {
    const double peak = peakFor(device, precisionOf(graph, op));
    computeSeconds = flops / (peak * computeEfficiency(graph, op, computeFraction));
  }
  double memorySeconds = 0;
  if (bytes > 0 && device.memoryBytesPerSecond > 0) {
    memorySeconds = bytes / (device.memoryBytesPerSecond * kMemoryEfficiency);
  }
  return std::max(computeSeconds, memorySeconds);
}

}  // namespace autopar::cost
