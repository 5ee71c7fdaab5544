#pragma once
/// \file
/// The efficiency constants of the analytic compute model, kept in the versioned data file
/// data/cost_model.json (compiled in) and refitted by bench/calibration.py --fit. The cost model
/// is a value: a request prices with the shipped constants unless it brings its own
/// (`--cost-model FILE`, which is how the fit tries candidates), and two requests in one process
/// may price with different ones.
///   CostModel mine = *readCostModelFile("fitted.json");
///   options.costModel = mine;  // cost::EvaluateOptions, search::SearchRequest, ...

#include <map>
#include <memory>
#include <span>
#include <string>

#include "util/expected.h"

namespace autopar::cost {

struct CostConstants {
  double matmulEfficiency = 0;  ///< large GEMMs, share of dense peak
  /// How many times faster an fp8 GEMM (Transformer Engine's, ir::OpAttrs::fp8) runs than the
  /// same GEMM in bf16, on a device with fp8 tensor cores: measured, not fitted
  /// (bench/gpu_fp8_gemms.py).
  double fp8MatmulSpeedup = 0;
  double attentionEfficiency = 0;  ///< FlashAttention-2's kernel, share of dense peak
  /// cuDNN's fused attention (Transformer Engine's, ir::OpAttrs::cudnnKernel), share of dense
  /// peak; 0 (the file does not give it): FlashAttention-2's, as cuDNN runs on Ampere.
  double cudnnAttentionEfficiency = 0;
  /// FlashAttention's first generation (flash-attn 1.x, the Triton kernel;
  /// ir::OpAttrs::flash1Kernel): its speed as a share of FlashAttention-2's on the same device;
  /// 0 (the file does not give it): FlashAttention-2's.
  double flash1AttentionSpeed = 0;
  double vectorEfficiency = 0;  ///< non-tensor-core FLOPs, share of dense peak
  double memoryEfficiency = 0;  ///< streaming kernels, share of HBM bandwidth
  double tileDim = 0;           ///< each per-device GEMM extent x costs a factor x / (x + tileDim)
  /// Host seconds of one per-rank staging copy of a list-API collective
  /// (layout::RedistributionOptions::perRankCopySeconds).
  double listCollectiveCopySeconds = 0;
  /// The shortest a kernel takes from launch to completion on the device: an op runs at least
  /// this long forward, and this long per gradient kernel backward (cost/op_cost.cc).
  double kernelLaunchSeconds = 0;
  /// Device time of a small kernel queued behind others, its launch already paid while the
  /// device ran earlier work: the mixture-of-experts router's and dispatcher's small kernels
  /// (cost/op_cost.cc).
  double queuedKernelSeconds = 0;
  /// A training process's memory beyond its tensors (planner::runtimeReserveBytes): the CUDA
  /// context with its libraries, NCCL's buffers per process group, and the caching allocator's
  /// reserve as a share of the tensors' peak.
  double cudaContextBytes = 0;
  double ncclGroupBytes = 0;
  double allocatorReserve = 0;
  /// The measured error of a stage's transient memory (what the step allocates and frees, the
  /// allocator's reserve over it included; planner::transientStageBytes), as a share of it,
  /// below and above the estimate: the memory band (planner::ConfigEstimate::peakBand).
  /// bench/published.py --memory-band measures them on the development rows with a measured
  /// peak and on those that ran, whose peak the device bounds. 0: a point estimate.
  double memoryBandBelow = 0;
  double memoryBandAbove = 0;
  /// Per device name (cluster::DeviceSpec::name) or architecture (a name's first part, "H100"
  /// for "H100-SXM5-80GB"): the constants with its overrides (the file's "devices" object)
  /// applied; other devices use the ones above.
  std::map<std::string, CostConstants> devices;
  /// The constants for `device`.
  [[nodiscard]] const CostConstants& forDevice(const std::string& device) const;
};

/// One constant of the file: its key, the largest value it may take, where it lives, and
/// whether it prices memory (the runtime's reserve) rather than time.
struct ConstantField {
  const char* key;
  double upper;
  double CostConstants::*field;
  bool optional = false;  ///< may be absent everywhere (it keeps 0)
  bool memory = false;
};

/// Every constant of the file, in its order.
std::span<const ConstantField> constantFields();

/// The constants as a cost-model file that parseCostConstants reads back: every constant, and
/// each device's overrides in full; `about` says where they came from.
std::string costConstantsToJson(const CostConstants& constants, const std::string& about);

/// A cost model as requests hold it: immutable constants, shared by the options and results
/// that price with them.
using CostModel = std::shared_ptr<const CostConstants>;

/// The compiled-in constants (data/cost_model.json).
const CostModel& shippedCostModel();

/// Parses a cost-model JSON document; errors name the field ("matmul_efficiency: expected a
/// number in (0, 1], got 1.5", "devices.H100-SXM5-80GB.attention_efficiency: ..."). A device
/// entry may override any of the constants.
Expected<CostConstants> parseCostConstants(const std::string& text);

/// Reads a cost-model file; errors name the path and the field.
Expected<CostModel> readCostModelFile(const std::string& path);

}  // namespace autopar::cost
