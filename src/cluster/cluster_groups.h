#pragma once
/// \file
/// A cluster of device groups (docs/cluster-format.md, "Device groups"): nodes of different
/// device kinds, each group with its price, and the links between groups.
///   name: mixed-h100-a100
///   groups:
///     - {name: h100, device: H100-SXM5-80GB, nodes: 2, devices_per_node: 8,
///        price_per_device_hour: 4.00}
///     - {name: a100, device: A100-SXM4-40GB, nodes: 4, devices_per_node: 8,
///        price_per_device_hour: 1.20}
///   links:
///     - {between: [h100, a100], gbps_per_device: 100, latency_us: 10}
/// A group's device is one a node preset holds (`autopar clusters`); inside a group the preset's
/// links join its devices, so a group is that preset over its nodes.

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "util/expected.h"

namespace autopar::cluster {

struct DeviceGroup {
  std::string name;
  std::string device;  ///< the device's name, as the file gives it ("H100-SXM5-80GB")
  std::string preset;  ///< the node preset holding that device ("dgx-h100")
  int nodes = 1;
  int devicesPerNode = 1;
  double pricePerDeviceHour = 0;  ///< USD; 0 when the file gives none
  [[nodiscard]] int devices() const { return nodes * devicesPerNode; }
};

struct GroupLink {
  std::string first;
  std::string second;
  double bytesPerSecond = 0;  ///< per device, one direction
  double latencySeconds = 0;
};

struct ClusterGroups {
  std::string name;
  std::vector<DeviceGroup> groups;
  std::vector<GroupLink> links;
  /// The group as a cluster of its own: its preset over its nodes.
  [[nodiscard]] Expected<Cluster> clusterOf(const DeviceGroup& group) const;
};

/// Whether yaml text describes device groups (a line starting with the top-level key `groups:`)
/// rather than one device type.
bool describesGroups(const std::string& yamlText);

/// Parses a groups file; `sourceName` prefixes errors ("mixed.yaml: groups[1].nodes: ...").
Expected<ClusterGroups> parseClusterGroupsYaml(const std::string& yamlText,
                                               const std::string& sourceName);
Expected<ClusterGroups> loadClusterGroupsYaml(const std::string& path);

}  // namespace autopar::cluster
