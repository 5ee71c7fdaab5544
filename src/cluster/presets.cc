#include <fmt/format.h>

#include <algorithm>

#include "cluster/cluster.h"
#include "util/limits.h"

namespace autopar::cluster {

namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr double kMicrosecond = 1e-6;
constexpr int kDevicesPerNode = 8;

// Per-hop latencies (alpha). NCCL's tuning model (src/graph/tuning.cc) charges about 1 us of
// hardware latency per NVLink hop and a few microseconds per network hop on top of a per-call
// base; we fold the base into the hop figures: 2 us inside a node, 6 us across nodes.
constexpr double kNvlinkHopSeconds = 2 * kMicrosecond;
constexpr double kNetworkHopSeconds = 6 * kMicrosecond;

/// DGX A100 / H100 style node: 8 GPUs on NVSwitch, one NIC per GPU.
Cluster dgxNode(std::string name, DeviceSpec device, double nvlinkBytesPerSecond,
                double nicBytesPerSecond, HostSpec host) {
  Cluster cluster;
  cluster.name = std::move(name);
  cluster.device = std::move(device);
  cluster.numDevices = kDevicesPerNode;
  cluster.devicesPerNode = kDevicesPerNode;
  cluster.levels = {LinkLevel{"nvlink", kDevicesPerNode, nvlinkBytesPerSecond, kNvlinkHopSeconds},
                    LinkLevel{"ib", kDevicesPerNode, nicBytesPerSecond, kNetworkHopSeconds}};
  cluster.host = host;
  return cluster;
}

// Sources: ../shared/data/published/hardware.json (NVIDIA datasheets via Narayanan et al. 2021 and
// glennklockwood.com): A100 312 TFLOP/s bf16/fp16 dense, 156 tf32, 19.5 fp32; 80 GB HBM2e at
// 2.039 TB/s (40 GB: 1.555 TB/s); NVLink 300 GB/s per direction; Selene nodes have eight 200 Gb/s
// HDR InfiniBand HCAs (25 GB/s per GPU). DGX A100 hosts carry 2 TB of DRAM (256 GB per GPU) and
// reach the GPUs over PCIe Gen4 x16 (32 GB/s nominal, ~25 GB/s achieved per direction).
Cluster dgxA100(const std::string& name, int64_t memoryGiB, double hbmBytesPerSecond) {
  DeviceSpec device{fmt::format("A100-SXM4-{}GB", memoryGiB),
                    {{Precision::kF32, 19.5 * kTera},
                     {Precision::kTF32, 156 * kTera},
                     {Precision::kBF16, 312 * kTera},
                     {Precision::kF16, 312 * kTera}},
                    memoryGiB * kGiB,
                    hbmBytesPerSecond};
  HostSpec host{256 * kGiB, 25 * kGiga, 1 * kTera};
  return dgxNode(name, device, 300 * kGiga, 25 * kGiga, host);
}

// Sources: hardware.json: H100 SXM5 989 TFLOP/s bf16 dense, 1979 fp8 dense, 80 GB HBM3 at
// 3.35 TB/s, NVLink 900 GB/s total (450 per direction), PCIe Gen5 128 GB/s bidirectional. FP32
// (67 TFLOP/s) and TF32 (494.7 dense) are NVIDIA's H100 SXM datasheet figures. DGX H100 nodes
// carry eight 400 Gb/s ConnectX-7 NICs (50 GB/s per GPU; the torchtitan and Llama 3 clusters in
// hardware.json also run 400 Gb/s per GPU) and 2 TB of host DRAM.
Cluster dgxH100() {
  DeviceSpec device{"H100-SXM5-80GB",
                    {{Precision::kF32, 67 * kTera},
                     {Precision::kTF32, 494.7 * kTera},
                     {Precision::kBF16, 989 * kTera},
                     {Precision::kF16, 989 * kTera},
                     {Precision::kFP8, 1979 * kTera}},
                    80 * kGiB,
                    3.35 * kTera};
  HostSpec host{256 * kGiB, 50 * kGiga, 2 * kTera};
  return dgxNode("dgx-h100", device, 450 * kGiga, 50 * kGiga, host);
}

// hardware.json found no authoritative Huawei figure for the 910B. The numbers below are the
// widely quoted third-party ones (910B: ~313 TFLOP/s fp16/bf16, 64 GB HBM2e at ~1.6 TB/s, HCCS
// 56 GB/s per link with 7 links in an 8-NPU full mesh, one 200 Gb/s RoCE port per NPU). Treat
// plans for this preset as approximate until a calibration row exists.
Cluster ascend910bNode() {
  DeviceSpec device{"Ascend-910B",
                    {{Precision::kF32, 78 * kTera},
                     {Precision::kBF16, 313 * kTera},
                     {Precision::kF16, 313 * kTera}},
                    64 * kGiB,
                    1.6 * kTera};
  HostSpec host{192 * kGiB, 25 * kGiga, 1 * kTera};
  Cluster cluster = dgxNode("ascend-910b-node", device, 56 * kGiga, 25 * kGiga, host);
  cluster.levels[0].name = "hccs";
  cluster.levels[1].name = "roce";
  return cluster;
}

// The CPU host the runtime (issue 7) runs ranks on: one process per rank exchanging tensors with
// Gloo over TCP loopback. Figures are for a small 2-core CI host: ~50 GFLOP/s of fp32 per rank
// (AVX2 FMA at ~3 GHz on one core is ~100 GFLOP/s peak), 2 GiB of memory per rank, ~10 GB/s
// memory bandwidth, and loopback TCP at ~2 GB/s with ~20 us per message.
Cluster cpuHost() {
  DeviceSpec device{"CPU-rank", {{Precision::kF32, 50 * kGiga}}, 2 * kGiB, 10 * kGiga};
  Cluster cluster;
  cluster.name = "cpu-host";
  cluster.device = device;
  cluster.numDevices = kDevicesPerNode;
  cluster.devicesPerNode = kDevicesPerNode;
  cluster.levels = {LinkLevel{"loopback", kDevicesPerNode, 2 * kGiga, 20 * kMicrosecond},
                    LinkLevel{"tcp", kDevicesPerNode, 1 * kGiga, 50 * kMicrosecond}};
  cluster.host = HostSpec{2 * kGiB, 10 * kGiga, 50 * kGiga};
  return cluster;
}

Expected<Cluster> nodePreset(const std::string& name) {
  if (name == "dgx-a100-80g") return dgxA100(name, 80, 2.039 * kTera);
  if (name == "dgx-a100-40g") return dgxA100(name, 40, 1.555 * kTera);
  if (name == "dgx-h100") return dgxH100();
  if (name == "ascend-910b-node") return ascend910bNode();
  if (name == "cpu-host") return cpuHost();
  return Error{fmt::format("unknown cluster preset '{}'; expected one of: {}", name,
                           fmt::join(clusterPresetNames(), ", "))};
}

}  // namespace

const std::vector<std::string>& clusterPresetNames() {
  static const std::vector<std::string> names{"dgx-a100-80g", "dgx-a100-40g", "dgx-h100",
                                              "ascend-910b-node", "cpu-host"};
  return names;
}

Expected<Cluster> clusterPreset(const std::string& name, int nodes, int devicesPerNode) {
  if (nodes < 1) return Error{fmt::format("--nodes {}: expected a positive integer", nodes)};
  if (devicesPerNode < 0) {
    return Error{fmt::format("--devices-per-node {}: expected a positive integer", devicesPerNode)};
  }
  auto node = nodePreset(name);
  if (!node) return node;
  Cluster cluster = std::move(*node);
  if (devicesPerNode > 0) {
    for (auto& level : cluster.levels) {
      if (level.domainSize == cluster.devicesPerNode) level.domainSize = devicesPerNode;
    }
    cluster.devicesPerNode = devicesPerNode;
  }
  if (static_cast<int64_t>(cluster.devicesPerNode) * nodes > limits::kMaxDevices) {
    return Error{
        fmt::format("--nodes {}: {} devices of {} per node is above the limit of {} "
                    "devices (docs/limits.md)",
                    nodes, static_cast<int64_t>(cluster.devicesPerNode) * nodes,
                    cluster.devicesPerNode, limits::kMaxDevices)};
  }
  cluster.numDevices = cluster.devicesPerNode * nodes;
  // The outermost level spans every device.
  cluster.levels.back().domainSize = cluster.numDevices;
  if (nodes > 1) cluster.name = fmt::format("{}x{}", nodes, name);
  return cluster;
}

Expected<Cluster> takeDevices(const Cluster& cluster, int numDevices) {
  if (numDevices < 1 || numDevices > cluster.numDevices) {
    return Error{fmt::format("--devices {}: expected 1..{} (the devices of {})", numDevices,
                             cluster.numDevices, cluster.name)};
  }
  Cluster taken = cluster;
  taken.numDevices = numDevices;
  for (auto& level : taken.levels) level.domainSize = std::min(level.domainSize, numDevices);
  taken.levels.back().domainSize = numDevices;
  return taken;
}

int Cluster::levelJoining(int rankA, int rankB) const {
  for (size_t level = 0; level < levels.size(); ++level) {
    const int domain = levels[level].domainSize;
    if (rankA / domain == rankB / domain) return static_cast<int>(level);
  }
  return static_cast<int>(levels.size()) - 1;
}

}  // namespace autopar::cluster
