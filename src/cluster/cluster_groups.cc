// Device groups (cluster_groups.h). Errors name the file and the key path.

#include "cluster/cluster_groups.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "cluster/yaml_fields.h"
#include "util/text_file.h"

namespace autopar::cluster {

namespace {

/// Device name -> the first node preset holding it ("H100-SXM5-80GB" -> "dgx-h100").
std::map<std::string, std::string> presetsByDevice() {
  std::map<std::string, std::string> presets;
  for (const std::string& name : clusterPresetNames()) {
    if (auto preset = clusterPreset(name)) presets.emplace(preset->device.name, name);
  }
  return presets;
}

/// A group whose device is a spec: one node of it, with the group's link levels (each but the
/// last within a node, so the group resizes by whole nodes) and host.
Expected<Cluster> parseSpecGroup(const YAML::Node& node, const std::string& path, int nodes) {
  auto perNode = positiveCount(node, path, "devices_per_node", true);
  if (!perNode) return perNode.error();
  if (static_cast<double>(nodes) * *perNode > kMaxDevices) {
    return Error{fmt::format("{}: {} x {} devices, expected at most {}", path, nodes, *perNode,
                             kMaxDevices)};
  }
  Cluster spec;
  spec.devicesPerNode = *perNode;
  spec.numDevices = *perNode;
  auto device = parseDeviceSpec(node["device"], path + ".device");
  if (!device) return device.error();
  spec.device = std::move(*device);
  auto levels = parseLinkLevels(node["levels"], path + ".levels", nodes * *perNode);
  if (!levels) return levels.error();
  for (size_t i = 0; i + 1 < levels->size(); ++i) {
    if (*perNode % (*levels)[i].domainSize != 0) {
      return Error{fmt::format(
          "{}.levels[{}].domain_size: {} spans more than a node of {}; a group's levels but "
          "the last join devices within a node",
          path, i, (*levels)[i].domainSize, *perNode)};
    }
  }
  spec.levels = std::move(*levels);
  auto host = parseHostSpec(node["host"], path + ".host");
  if (!host) return host.error();
  spec.host = *host;
  return spec;
}

Expected<DeviceGroup> parseGroup(const YAML::Node& node, const std::string& path,
                                 const std::map<std::string, std::string>& presets) {
  if (!node.IsMap()) return Error{fmt::format("{}: expected a map with name, device, nodes", path)};
  if (auto status = checkKeys(node, path,
                              {"name", "device", "nodes", "devices_per_node", "levels", "host",
                               "zone", "price_per_device_hour"});
      !status) {
    return status.error();
  }
  DeviceGroup group;
  auto name = text(node, path, "name");
  if (!name) return name.error();
  group.name = *name;
  if (node["zone"]) {
    auto zone = text(node, path, "zone");
    if (!zone) return zone.error();
    group.zone = *zone;
  }
  auto nodes = positiveCount(node, path, "nodes", false, 1);
  if (!nodes) return nodes.error();
  group.nodes = *nodes;
  if (node["device"] && node["device"].IsMap()) {
    auto spec = parseSpecGroup(node, path, group.nodes);
    if (!spec) return spec.error();
    group.device = spec->device.name;
    group.devicesPerNode = spec->devicesPerNode;
    group.spec = std::move(*spec);
  } else {
    for (const char* key : {"levels", "host"}) {
      if (node[key]) {
        return Error{
            fmt::format("{}.{}: a preset's device brings its own links; give {} with a device spec "
                        "(docs/cluster-format.md)",
                        path, key, key)};
      }
    }
    auto device = text(node, path, "device");
    if (!device) return device.error();
    const auto preset = presets.find(*device);
    if (preset == presets.end()) {
      std::vector<std::string> known;
      for (const auto& [deviceName, presetName] : presets) known.push_back(deviceName);
      return Error{
          fmt::format("{}.device: '{}' is no preset's device; expected one of {}, or a device spec "
                      "(docs/cluster-format.md)",
                      path, *device, fmt::join(known, ", "))};
    }
    group.device = *device;
    group.preset = preset->second;
    const int presetPerNode = clusterPreset(group.preset)->devicesPerNode;
    auto perNode = positiveCount(node, path, "devices_per_node", false, presetPerNode);
    if (!perNode) return perNode.error();
    group.devicesPerNode = *perNode;
  }
  if (static_cast<double>(group.nodes) * group.devicesPerNode > kMaxDevices) {
    return Error{fmt::format("{}: {} x {} devices, expected at most {}", path, group.nodes,
                             group.devicesPerNode, kMaxDevices)};
  }
  if (const YAML::Node price = node["price_per_device_hour"]) {
    double dollars = -1;
    // Up to $1M a device-hour: a price beyond it is a typo, and it bounds what costs multiply.
    if (!price.IsScalar() || !YAML::convert<double>::decode(price, dollars) || !(dollars >= 0) ||
        !(dollars <= 1e6)) {
      return Error{
          fmt::format("{}.price_per_device_hour: expected US dollars from 0 to 1e6, got "
                      "'{}'",
                      path, price.IsScalar() ? price.Scalar() : "a map or list")};
    }
    group.pricePerDeviceHour = dollars;
  }
  return group;
}

Expected<GroupLink> parseLink(const YAML::Node& node, const std::string& path,
                              const std::set<std::string>& groups) {
  if (!node.IsMap()) {
    return Error{fmt::format("{}: expected a map with between, gbps_per_device, latency_us", path)};
  }
  if (auto status = checkKeys(node, path, {"between", "gbps_per_device", "latency_us"}); !status) {
    return status.error();
  }
  const YAML::Node between = node["between"];
  if (!between || !between.IsSequence() || between.size() != 2 || !between[0].IsScalar() ||
      !between[1].IsScalar()) {
    return Error{fmt::format("{}.between: expected two group names, e.g. [h100, a100]", path)};
  }
  GroupLink link{between[0].Scalar(), between[1].Scalar()};
  for (const std::string& end : {link.first, link.second}) {
    if (!groups.contains(end)) {
      return Error{fmt::format("{}.between: no group named '{}'; the groups are {}", path, end,
                               fmt::join(groups, ", "))};
    }
  }
  if (link.first == link.second) {
    return Error{
        fmt::format("{}.between: joins '{}' to itself; a group's own links are its "
                    "preset's",
                    path, link.first)};
  }
  auto gbps = positiveNumber(node, path, "gbps_per_device", true);
  if (!gbps) return gbps.error();
  link.bytesPerSecond = *gbps * 1e9 / 8;
  auto latency = positiveNumber(node, path, "latency_us", true);
  if (!latency) return latency.error();
  link.latencySeconds = *latency * 1e-6;
  return link;
}

/// Groups in different zones cross the network between zones, which only the file can price:
/// every such pair needs a link.
Status checkZones(const ClusterGroups& cluster) {
  for (size_t a = 0; a < cluster.groups.size(); ++a) {
    for (size_t b = a + 1; b < cluster.groups.size(); ++b) {
      const DeviceGroup& first = cluster.groups[a];
      const DeviceGroup& second = cluster.groups[b];
      if (first.zone == second.zone) continue;
      if (cluster.linkBetween(first.name, second.name) == nullptr) {
        return Error{fmt::format(
            "groups[{}].zone: {} ({}) and {} ({}) are in different zones; links must give "
            "the link between them",
            b, first.name, first.zone.empty() ? "no zone" : "zone " + first.zone, second.name,
            second.zone.empty() ? "no zone" : "zone " + second.zone)};
      }
    }
  }
  return {};
}

Expected<ClusterGroups> parseDocument(const YAML::Node& root) {
  if (!root.IsMap()) return Error{"expected a map with name, groups and links"};
  if (auto status = checkKeys(root, "", {"name", "groups", "links"}); !status) {
    return status.error();
  }
  ClusterGroups cluster;
  auto name = text(root, "", "name");
  if (!name) return name.error();
  cluster.name = *name;
  const YAML::Node groups = root["groups"];
  if (!groups || !groups.IsSequence() || groups.size() == 0) {
    return Error{"groups: expected a non-empty list of {name, device, nodes, devices_per_node}"};
  }
  const auto presets = presetsByDevice();
  std::set<std::string> names;
  double devices = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string path = fmt::format("groups[{}]", i);
    auto group = parseGroup(groups[i], path, presets);
    if (!group) return group.error();
    if (!names.insert(group->name).second) {
      return Error{fmt::format("{}.name: '{}' names another group too", path, group->name)};
    }
    devices += group->devices();
    cluster.groups.push_back(std::move(*group));
  }
  if (devices > kMaxDevices) {
    return Error{
        fmt::format("groups: {} devices in all, expected at most {}", devices, kMaxDevices)};
  }
  if (const YAML::Node links = root["links"]) {
    if (!links.IsSequence()) return Error{"links: expected a list of {between, gbps_per_device}"};
    std::set<std::pair<std::string, std::string>> joined;
    for (size_t i = 0; i < links.size(); ++i) {
      const std::string path = fmt::format("links[{}]", i);
      auto link = parseLink(links[i], path, names);
      if (!link) return link.error();
      if (!joined.insert(std::minmax(link->first, link->second)).second) {
        return Error{fmt::format("{}.between: {} and {} are joined by an earlier link too", path,
                                 link->first, link->second)};
      }
      cluster.links.push_back(std::move(*link));
    }
  }
  if (auto status = checkZones(cluster); !status) return status.error();
  return cluster;
}

}  // namespace

Expected<Cluster> ClusterGroups::clusterOf(const DeviceGroup& group) const {
  Cluster cluster;
  if (group.spec) {
    cluster = *group.spec;
    cluster.numDevices = group.nodes * group.devicesPerNode;
    cluster.levels.back().domainSize = cluster.numDevices;
  } else {
    auto preset = clusterPreset(group.preset, group.nodes, group.devicesPerNode);
    if (!preset) return preset.error();
    cluster = std::move(*preset);
  }
  cluster.name = fmt::format("{}/{}", name, group.name);
  return cluster;
}

Expected<Cluster> ClusterGroups::clusterOf(const std::string& groupName, int nodes) const {
  auto index = indexOf(groupName);
  if (!index) return index.error();
  DeviceGroup sized = groups[*index];
  if (nodes > 0) sized.nodes = nodes;
  return clusterOf(sized);
}

Expected<size_t> ClusterGroups::indexOf(const std::string& groupName) const {
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].name == groupName) return i;
  }
  std::vector<std::string> names;
  for (const DeviceGroup& group : groups) names.push_back(group.name);
  return Error{
      fmt::format("no group named '{}'; the groups are {}", groupName, fmt::join(names, ", "))};
}

const GroupLink* ClusterGroups::linkBetween(const std::string& first,
                                            const std::string& second) const {
  for (const GroupLink& link : links) {
    if (std::minmax(link.first, link.second) == std::minmax(first, second)) return &link;
  }
  return nullptr;
}

bool isGroupReference(const std::string& name) {
  static const std::regex kReference(R"(\.ya?ml#[^#/]+$)");
  return std::regex_search(name, kReference);
}

Expected<Cluster> loadGroupReference(const std::string& reference, int nodes) {
  const size_t hash = reference.rfind('#');
  auto groups = loadClusterGroupsYaml(reference.substr(0, hash));
  if (!groups) return groups.error();
  auto cluster = groups->clusterOf(reference.substr(hash + 1), nodes);
  if (!cluster) return cluster.error().in(reference);
  return cluster;
}

bool describesGroups(const std::string& yamlText) {
  // A top-level key starts a line: no parse (the reader that follows parses once).
  static const std::regex kGroupsKey(R"((^|\n)groups[ \t]*:)");
  return std::regex_search(yamlText, kGroupsKey);
}

Expected<ClusterGroups> parseClusterGroupsYaml(const std::string& yamlText,
                                               const std::string& sourceName) {
  auto root = loadOneDocument(yamlText);
  if (!root) return root.error().in(sourceName);
  auto cluster = parseDocument(*root);
  if (!cluster) return cluster.error().in(sourceName);
  for (DeviceGroup& group : cluster->groups) {
    if (group.spec) group.reference = sourceName + "#" + group.name;
  }
  return cluster;
}

Expected<ClusterGroups> loadClusterGroupsYaml(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return text.error();
  return parseClusterGroupsYaml(*text, path);
}

}  // namespace autopar::cluster
