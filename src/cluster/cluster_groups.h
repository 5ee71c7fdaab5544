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
/// A group's device is one a node preset holds (`autopar clusters`), whose links then join the
/// group's devices, or a spec with its own link levels (as a one-device cluster yaml gives
/// them). Groups in different zones must be joined by a link.

#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "util/expected.h"

namespace autopar::cluster {

struct DeviceGroup {
  std::string name;
  std::string device;  ///< the device's name, as the file gives it ("H100-SXM5-80GB")
  std::string preset;  ///< the node preset holding that device ("dgx-h100"); empty for a spec
  /// A device given by its spec (docs/cluster-format.md): one node of it, its levels (those
  /// inside a node, then the last, between nodes) and host; the cluster by which
  /// planner::loadCluster names it, "FILE.yaml#NAME" (`reference`).
  std::optional<Cluster> spec;
  std::string reference;
  std::string zone;  ///< empty: none given
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
  /// The group as a cluster of its own: its preset or spec over its nodes.
  [[nodiscard]] Expected<Cluster> clusterOf(const DeviceGroup& group) const;
  /// The group named "NAME" of a "FILE.yaml#NAME" reference over `nodes` nodes (0: its own).
  [[nodiscard]] Expected<Cluster> clusterOf(const std::string& name, int nodes) const;
  /// The index of the group named `name`; the error lists the groups in the file's order.
  [[nodiscard]] Expected<size_t> indexOf(const std::string& name) const;
  /// The link the file gives between two groups, in either order; null when none.
  [[nodiscard]] const GroupLink* linkBetween(const std::string& first,
                                             const std::string& second) const;
};

/// Whether yaml text describes device groups (a line starting with the top-level key `groups:`)
/// rather than one device type.
bool describesGroups(const std::string& yamlText);

/// Parses a groups file; `sourceName` prefixes errors ("mixed.yaml: groups[1].nodes: ...").
Expected<ClusterGroups> parseClusterGroupsYaml(const std::string& yamlText,
                                               const std::string& sourceName);
Expected<ClusterGroups> loadClusterGroupsYaml(const std::string& path);

/// Whether `name` refers to one group of a groups file ("mixed.yaml#h100"), and how to split it.
bool isGroupReference(const std::string& name);
/// The group `reference` names, over `nodes` nodes (0: the file's); errors name the reference.
Expected<Cluster> loadGroupReference(const std::string& reference, int nodes);

}  // namespace autopar::cluster
