#pragma once
/// \file
/// The Plan value: how every op is sharded, the redistributions inserted on edges, the estimate,
/// and the inputs it was made from. Serialised as versioned JSON (docs/plan-format.md).

#include <cstdint>
#include <string>
#include <vector>

#include "ir/op.h"
#include "layout/strategy.h"

namespace autopar::plan {

inline constexpr int kPlanFormatVersion = 1;

/// A tensor layout as recorded in a plan.
struct LayoutRecord {
  std::string tensor;
  std::vector<int64_t> deviceMatrix;
  std::vector<std::vector<int>> dimAxes;  ///< per dim, device-matrix axes (0 = outermost)
  std::vector<int64_t> tensorMap;         ///< the seeds' right-to-left tensor map
  std::vector<int> partialAxes;
};

struct OpRecord {
  std::string name;
  std::string kind;
  std::string block;
  layout::Strategy strategy;
  std::string strategySource;  ///< "override", "annotation", "default", or a search's name
  std::vector<int64_t> deviceMatrix;
  std::vector<LayoutRecord> inputs;
  std::vector<LayoutRecord> outputs;
  double forwardSeconds = 0;
  double backwardSeconds = 0;
};

struct StepRecord {
  std::string primitive;  ///< "all_gather", "split", ...
  std::vector<int64_t> deviceMatrix;
  int axis = 0;
  int dim = -1;
  int splitDim = -1;
  int64_t bytesPerDevice = 0;
  double seconds = 0;
  std::string algorithm;
};

struct RedistributionRecord {
  std::string tensor;
  std::string fromOp;  ///< empty for parameters and inputs
  std::string toOp;
  std::string direction;  ///< "forward" or "backward"
  bool gradientSync = false;
  double seconds = 0;
  int64_t bytesPerDevice = 0;
  std::vector<StepRecord> steps;
};

struct MemoryRecord {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizerStates = 0;
  int64_t activations = 0;
  int64_t communicationBuffers = 0;
  int64_t host = 0;
};

struct EstimateRecord {
  double stepTimeSeconds = 0;
  double computeSeconds = 0;
  double communicationSeconds = 0;
  double gradientSyncSeconds = 0;
  double optimizerSeconds = 0;
  int64_t peakMemoryBytes = 0;
  int64_t deviceMemoryBytes = 0;  ///< capacity of one device
  bool fits = true;
  std::vector<int64_t> memoryByDevice;
  MemoryRecord memory;
};

struct InputsRecord {
  std::string model;      ///< preset name or file path
  std::string modelHash;  ///< FNV-1a 64 of the canonical graph JSON, hex
  std::string cluster;
  std::string clusterHash;  ///< FNV-1a 64 of the cluster description, hex
  int64_t microBatch = 0;
  int64_t sequence = 0;
};

struct Plan {
  int version = kPlanFormatVersion;
  std::string search = "semi_auto";
  int64_t devices = 0;
  std::vector<int> ranks;
  InputsRecord inputs;
  std::vector<OpRecord> ops;
  std::vector<RedistributionRecord> redistributions;
  /// Conflicts a search reconciled, one line each (sharding propagation).
  std::vector<std::string> conflicts;
  EstimateRecord estimate;
};

}  // namespace autopar::plan
