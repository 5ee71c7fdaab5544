#include "cost/compute.h"

#include <algorithm>
#include <optional>

#include "cost/constants.h"

namespace autopar::cost {

namespace {

bool isTensorCoreKind(ir::OpFamily family) {
  return family == ir::OpFamily::kMatMul || family == ir::OpFamily::kAttention;
}

}  // namespace

std::optional<cluster::Precision> precisionOf(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kBF16:
      return cluster::Precision::kBF16;
    case ir::DType::kF16:
      return cluster::Precision::kF16;
    case ir::DType::kFP8:
      return cluster::Precision::kFP8;
    case ir::DType::kF32:
      return cluster::Precision::kF32;
    default:
      return std::nullopt;
  }
}

cluster::Precision precisionOf(const ir::Graph& graph, const ir::Op& op) {
  for (ir::TensorId input : op.inputs) {
    if (auto precision = precisionOf(graph.tensor(input).type.dtype)) return *precision;
  }
  return cluster::Precision::kF32;
}

double computeEfficiency(const ir::Op& op, const std::optional<rules::LocalGemm>& gemm,
                         const CostConstants& constants) {
  const ir::OpFamily family = ir::familyOf(op.kind);
  // The constants and their sources are in data/cost_model.json.
  if (!isTensorCoreKind(family)) return constants.vectorEfficiency;
  // Fused attention runs fixed tiles along the sequence; its fitted efficiency covers its sizes.
  if (family == ir::OpFamily::kAttention) {
    if (op.attrs.cudnnKernel && constants.cudnnAttentionEfficiency > 0) {
      return constants.cudnnAttentionEfficiency;
    }
    if (op.attrs.flash1Kernel && constants.flash1AttentionSpeed > 0) {
      return constants.attentionEfficiency * constants.flash1AttentionSpeed;
    }
    return constants.attentionEfficiency;
  }
  // A GEMM underfills the device along each of its three dims separately (partial tiles, partial
  // waves, the pipeline's fill along the depth): each extent x costs a factor x / (x + tileDim).
  // The product is symmetric in the extents, so the backward's two GEMMs, which permute them,
  // run at the forward's efficiency.
  double efficiency = constants.matmulEfficiency;
  if (gemm) {
    for (double extent : {gemm->rows, gemm->columns, gemm->depth}) {
      efficiency *= extent / (extent + constants.tileDim);
    }
  }
  return efficiency;
}

double peakFlops(const cluster::DeviceSpec& device, cluster::Precision precision) {
  auto it = device.peakFlopsPerSecond.find(precision);
  if (it != device.peakFlopsPerSecond.end() && it->second > 0) return it->second;
  // A precision the device has no quoted peak for runs at its bf16 rate (fp8 on A100 falls back).
  it = device.peakFlopsPerSecond.find(cluster::Precision::kBF16);
  if (it != device.peakFlopsPerSecond.end() && it->second > 0) return it->second;
  double best = 0;
  for (const auto& [unused, peak] : device.peakFlopsPerSecond) best = std::max(best, peak);
  return best;
}

double memorySeconds(const DeviceModel& device, double bytes) {
  if (bytes <= 0 || device.spec.memoryBytesPerSecond <= 0) return 0;
  return bytes / (device.spec.memoryBytesPerSecond * device.constants.memoryEfficiency);
}

double rooflineSeconds(const ir::Graph& graph, const ir::Op& op, double flops, double bytes,
                       const std::optional<rules::LocalGemm>& gemm, const DeviceModel& device) {
  double computeSeconds = 0;
  if (flops > 0) {
    // An fp8 GEMM (Transformer Engine's) takes its bf16 twin's time divided by the measured
    // fp8_matmul_speedup where the device has fp8 tensor cores, and the bf16 time elsewhere.
    const cluster::Precision precision =
        op.attrs.fp8 ? cluster::Precision::kBF16 : precisionOf(graph, op);
    computeSeconds =
        flops / (peakFlops(device.spec, precision) * computeEfficiency(op, gemm, device.constants));
    if (op.attrs.fp8 && peakFlops(device.spec, cluster::Precision::kFP8) >
                            peakFlops(device.spec, cluster::Precision::kBF16)) {
      computeSeconds /= device.constants.fp8MatmulSpeedup;
    }
  }
  return std::max(computeSeconds, memorySeconds(device, bytes));
}

}  // namespace autopar::cost
