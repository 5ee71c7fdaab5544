#pragma once
/// \file
/// Reading a cluster yaml's fields (docs/cluster-format.md): each error names the key path
/// ("levels[1].gbytes_per_s: expected a number from 0.001 to 2^40, got '-5'"). Shared by the
/// one-device-type spec (cluster_yaml.cc) and the device groups (cluster_groups.cc).

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "util/expected.h"

namespace autopar::cluster {

/// Device counts go up to 2^20: a whole number, positive, and small enough that products of
/// counts stay within int.
inline constexpr double kMaxDevices = 1048576;

/// The one document of a cluster yaml (an empty node for empty text): a second document, or a
/// syntax error ("line 3: <yaml-cpp's message>"), is one line.
Expected<YAML::Node> loadOneDocument(const std::string& yamlText);

/// "device.memory_gib", or "nodes" at the top level.
std::string keyPath(const std::string& path, const std::string& key);

/// Fails on a key `map` holds twice (yaml-cpp would read the first, PyYAML the last) or a key
/// not in `known`, naming the closest known one: a misspelt optional key would silently take
/// its default.
Status checkKeys(const YAML::Node& map, const std::string& path,
                 const std::vector<std::string_view>& known);

/// A positive number at `node[key]`; `required` decides whether absence is an error.
Expected<double> positiveNumber(const YAML::Node& node, const std::string& path,
                                const std::string& key, bool required, double fallback = 0);

/// A positive whole number of devices (or nodes) at most kMaxDevices.
Expected<int> positiveCount(const YAML::Node& node, const std::string& path, const std::string& key,
                            bool required, int fallback = 0);

/// A name at `node[key]`: a non-empty string the outputs may repeat (util/label.h's isLabel).
Expected<std::string> text(const YAML::Node& node, const std::string& path, const std::string& key);

/// The parts of a cluster spec (docs/cluster-format.md), under `path` ("device", or
/// "groups[1].device" for a device group given by its spec).
Expected<DeviceSpec> parseDeviceSpec(const YAML::Node& node, const std::string& path);
/// Link levels, innermost first, over `numDevices` (the last level spans them all).
Expected<std::vector<LinkLevel>> parseLinkLevels(const YAML::Node& node, const std::string& path,
                                                 int numDevices);
/// Optional: absent gives zeros.
Expected<HostSpec> parseHostSpec(const YAML::Node& node, const std::string& path);

}  // namespace autopar::cluster
