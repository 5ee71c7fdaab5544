#pragma once
/// \file
/// The physical cluster: one device type, a hierarchy of link levels, and the host.
///
/// Levels go from the innermost (fastest) outward. A level's `domainSize` is how many consecutive
/// device ranks it connects: DGX-A100 has level 0 "nvlink" with domainSize 8 (one node) and
/// level 1 "ib" spanning every device. Rank r lives in domain r / domainSize of each level.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/expected.h"

namespace autopar::cluster {

/// Numeric formats the device peak is quoted for.
enum class Precision { kF32, kTF32, kBF16, kF16, kFP8 };

struct DeviceSpec {
  std::string name;                                ///< e.g. "A100-SXM4-80GB"
  std::map<Precision, double> peakFlopsPerSecond;  ///< dense peak per precision
  int64_t memoryBytes = 0;                         ///< device memory (HBM)
  double memoryBytesPerSecond = 0;                 ///< HBM bandwidth
};

struct LinkLevel {
  std::string name;           ///< "nvlink", "ib", "hccs", "roce", "loopback"
  int domainSize = 1;         ///< consecutive ranks joined at this level
  double bytesPerSecond = 0;  ///< per device, one direction (what a ring step can push)
  double latencySeconds = 0;  ///< alpha: per-message latency at this level
};

struct HostSpec {
  int64_t memoryBytes = 0;        ///< host DRAM available to one device's process
  double linkBytesPerSecond = 0;  ///< host<->device (PCIe) per device, one direction
  double flopsPerSecond = 0;      ///< host compute available to one device's process
};

struct Cluster {
  std::string name;
  DeviceSpec device;
  int numDevices = 0;
  int devicesPerNode = 1;
  std::vector<LinkLevel> levels;  ///< innermost first; the last spans every device
  HostSpec host;

  /// The index of the innermost level whose domain holds both ranks.
  [[nodiscard]] int levelJoining(int rankA, int rankB) const;
};

/// Preset names: "dgx-a100-80g", "dgx-a100-40g", "dgx-h100", "ascend-910b-node", "cpu-host".
const std::vector<std::string>& clusterPresetNames();

/// A node preset multiplied by `nodes` (>= 1). Unknown names fail with the list of presets.
/// `devicesPerNode` > 0 resizes the node (its intra-node links then join that many devices), as
/// seed 003's --simulated-nproc-per-node does.
Expected<Cluster> clusterPreset(const std::string& name, int nodes = 1, int devicesPerNode = 0);

/// Reads a cluster spec file (yaml; format in docs/cluster-format.md). Errors name the file and
/// field, e.g. "c.yaml: levels[1].bandwidth_gbytes_per_s: expected a positive number".
Expected<Cluster> loadClusterYaml(const std::string& path);

/// Parses yaml text; `sourceName` prefixes errors.
Expected<Cluster> parseClusterYaml(const std::string& text, const std::string& sourceName);

/// The first `numDevices` devices of the cluster (1 <= numDevices <= cluster.numDevices).
Expected<Cluster> takeDevices(const Cluster& cluster, int numDevices);

}  // namespace autopar::cluster
