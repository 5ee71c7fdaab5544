#pragma once
/// \file
/// Compute time of one op on one device: a roofline with per-kind efficiencies.
///   seconds = max(flops / (peak(precision) * efficiency(kind, shape)),
///                 bytes / (hbmBandwidth * memoryEfficiency))
/// Efficiencies are what large kernels of each kind reach on A100/H100-class devices; they live
/// with their sources in data/cost_model.json (cost/constants.h). A profiled table (issue 6)
/// overrides these per block.

#include <cstdint>
#include <optional>

#include "cluster/cluster.h"
#include "cost/constants.h"
#include "ir/graph.h"
#include "rules/sharded_op.h"

namespace autopar::cost {

/// One device as the cost model prices it: its spec and the cost model's constants for it.
///   DeviceModel h100 = deviceModel(cluster.device, *options.costModel);
///   h100.constants.matmulEfficiency  // the file's "H100" overrides applied
struct DeviceModel {
  const cluster::DeviceSpec& spec;
  const CostConstants& constants;  ///< CostConstants::forDevice(spec.name)
};

inline DeviceModel deviceModel(const cluster::DeviceSpec& spec, const CostConstants& model) {
  return {spec, model.forDevice(spec.name)};
}

/// The precision a floating dtype computes in; nullopt for integer and bool types.
std::optional<cluster::Precision> precisionOf(ir::DType dtype);

/// The precision an op computes in: from its first floating input's dtype.
cluster::Precision precisionOf(const ir::Graph& graph, const ir::Op& op);

/// The device's dense peak at `precision`; a precision it quotes no peak for runs at its bf16
/// rate (fp8 on A100), else at its highest quoted peak.
double peakFlops(const cluster::DeviceSpec& device, cluster::Precision precision);

/// Fraction of the precision's peak the op's kind reaches. A MatMul reaches matmul_efficiency
/// times x / (x + tile_dim) for each extent x of its per-device GEMM (`gemm`): with tile_dim 128,
/// 4096x4096x4096 reaches 91% of matmul_efficiency and 2048x2048x512 71%.
double computeEfficiency(const ir::Op& op, const std::optional<rules::LocalGemm>& gemm,
                         const CostConstants& deviceConstants);

/// Seconds to stream `bytes` through the device's HBM at the fitted memory efficiency (0 when the
/// device quotes no bandwidth).
double memorySeconds(const DeviceModel& device, double bytes);

/// Seconds for `flops` and `bytes` of `op` on one device (both already per device); `gemm` is the
/// op's per-device GEMM when it is a contraction.
double rooflineSeconds(const ir::Graph& graph, const ir::Op& op, double flops, double bytes,
                       const std::optional<rules::LocalGemm>& gemm, const DeviceModel& device);

}  // namespace autopar::cost
