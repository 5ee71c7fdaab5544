// Cluster spec files (docs/cluster-format.md). Errors name the file and the key path.

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/yaml_fields.h"
#include "util/text_file.h"

namespace autopar::cluster {

namespace {

constexpr double kGiB = 1073741824.0;

}  // namespace

Expected<DeviceSpec> parseDeviceSpec(const YAML::Node& node, const std::string& path) {
  if (!node || !node.IsMap()) {
    return Error{fmt::format("{}: expected a map with name, memory_gib, ...", path)};
  }
  if (auto status =
          checkKeys(node, path, {"name", "memory_gib", "memory_gbytes_per_s", "peak_tflops"});
      !status) {
    return status.error();
  }
  DeviceSpec device;
  auto name = text(node, path, "name");
  if (!name) return name.error();
  device.name = *name;
  auto memory = positiveNumber(node, path, "memory_gib", true);
  if (!memory) return memory.error();
  // 2^20 GiB (1 PiB) per device keeps every byte count autopar derives from it within int64.
  if (*memory > 1048576) {
    return Error{fmt::format("{}.memory_gib: {} is above the limit 1048576 (docs/limits.md)", path,
                             *memory)};
  }
  device.memoryBytes = static_cast<int64_t>(*memory * kGiB);
  auto bandwidth = positiveNumber(node, path, "memory_gbytes_per_s", true);
  if (!bandwidth) return bandwidth.error();
  device.memoryBytesPerSecond = *bandwidth * 1e9;
  const YAML::Node peaks = node["peak_tflops"];
  const std::string peaksPath = path + ".peak_tflops";
  if (!peaks || !peaks.IsMap()) {
    return Error{fmt::format("{}: expected a map such as {{bf16: 312}}", peaksPath)};
  }
  const std::pair<const char*, Precision> names[] = {{"fp32", Precision::kF32},
                                                     {"tf32", Precision::kTF32},
                                                     {"bf16", Precision::kBF16},
                                                     {"fp16", Precision::kF16},
                                                     {"fp8", Precision::kFP8}};
  for (const auto& entry : peaks) {
    const std::string key = entry.first.as<std::string>();
    auto match = std::find_if(std::begin(names), std::end(names),
                              [&](const auto& item) { return key == item.first; });
    if (match == std::end(names)) {
      return Error{
          fmt::format("{}.{}: unknown precision; expected fp32, tf32, "
                      "bf16, fp16 or fp8",
                      peaksPath, key)};
    }
    auto peak = positiveNumber(peaks, peaksPath, key, true);
    if (!peak) return peak.error();
    device.peakFlopsPerSecond[match->second] = *peak * 1e12;
  }
  if (auto status = checkKeys(peaks, peaksPath, {"fp32", "tf32", "bf16", "fp16", "fp8"}); !status) {
    return status.error();
  }
  if (device.peakFlopsPerSecond.empty()) {
    return Error{fmt::format("{}: expected at least one precision", peaksPath)};
  }
  return device;
}

Expected<std::vector<LinkLevel>> parseLinkLevels(const YAML::Node& node, const std::string& where,
                                                 int numDevices) {
  if (!node || !node.IsSequence() || node.size() == 0) {
    return Error{fmt::format(
        "{}: expected a non-empty list of {{name, domain_size, gbytes_per_s, latency_us}}", where)};
  }
  std::vector<LinkLevel> levels;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string path = fmt::format("{}[{}]", where, i);
    const bool last = i + 1 == node.size();
    if (auto status =
            checkKeys(node[i], path, {"name", "domain_size", "gbytes_per_s", "latency_us"});
        !status) {
      return status.error();
    }
    LinkLevel level;
    auto name = text(node[i], path, "name");
    if (!name) return name.error();
    level.name = *name;
    auto domain = positiveCount(node[i], path, "domain_size", !last, numDevices);
    if (!domain) return domain.error();
    level.domainSize = *domain;
    auto bandwidth = positiveNumber(node[i], path, "gbytes_per_s", true);
    if (!bandwidth) return bandwidth.error();
    level.bytesPerSecond = *bandwidth * 1e9;
    auto latency = positiveNumber(node[i], path, "latency_us", true);
    if (!latency) return latency.error();
    level.latencySeconds = *latency * 1e-6;
    const int previous = levels.empty() ? 1 : levels.back().domainSize;
    if (level.domainSize < previous || level.domainSize % previous != 0 ||
        numDevices % level.domainSize != 0) {
      return Error{
          fmt::format("{}.domain_size: {} must be a multiple of the previous level's ({}) "
                      "and divide the {} devices",
                      path, level.domainSize, previous, numDevices)};
    }
    levels.push_back(level);
  }
  levels.back().domainSize = numDevices;
  return levels;
}

Expected<HostSpec> parseHostSpec(const YAML::Node& node, const std::string& path) {
  HostSpec host;
  if (!node) return host;
  if (auto status = checkKeys(node, path, {"memory_gib", "link_gbytes_per_s", "tflops"}); !status) {
    return status.error();
  }
  auto memory = positiveNumber(node, path, "memory_gib", false, 0);
  if (!memory) return memory.error();
  auto link = positiveNumber(node, path, "link_gbytes_per_s", false, 0);
  if (!link) return link.error();
  auto tflops = positiveNumber(node, path, "tflops", false, 0);
  if (!tflops) return tflops.error();
  return HostSpec{static_cast<int64_t>(*memory * kGiB), *link * 1e9, *tflops * 1e12};
}

namespace {

Expected<Cluster> parseDocument(const YAML::Node& root) {
  if (!root.IsMap()) return Error{"expected a map with name, devices_per_node, device and levels"};
  if (auto status =
          checkKeys(root, "", {"name", "nodes", "devices_per_node", "device", "levels", "host"});
      !status) {
    return status.error();
  }
  Cluster cluster;
  auto name = text(root, "", "name");
  if (!name) return name.error();
  cluster.name = *name;
  auto nodes = positiveCount(root, "", "nodes", false, 1);
  if (!nodes) return nodes.error();
  auto perNode = positiveCount(root, "", "devices_per_node", true);
  if (!perNode) return perNode.error();
  if (static_cast<double>(*nodes) * *perNode > kMaxDevices) {
    return Error{fmt::format("nodes x devices_per_node: {} x {} devices, expected at most {}",
                             *nodes, *perNode, kMaxDevices)};
  }
  cluster.devicesPerNode = *perNode;
  cluster.numDevices = *perNode * *nodes;
  auto device = parseDeviceSpec(root["device"], "device");
  if (!device) return device.error();
  cluster.device = std::move(*device);
  auto levels = parseLinkLevels(root["levels"], "levels", cluster.numDevices);
  if (!levels) return levels.error();
  cluster.levels = std::move(*levels);
  auto host = parseHostSpec(root["host"], "host");
  if (!host) return host.error();
  cluster.host = *host;
  return cluster;
}

}  // namespace

Expected<Cluster> parseClusterYaml(const std::string& yamlText, const std::string& sourceName) {
  auto root = loadOneDocument(yamlText);
  if (!root) return root.error().in(sourceName);
  auto cluster = parseDocument(*root);
  if (!cluster) return cluster.error().in(sourceName);
  return cluster;
}

Expected<Cluster> loadClusterYaml(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return text.error();
  return parseClusterYaml(*text, path);
}

}  // namespace autopar::cluster
