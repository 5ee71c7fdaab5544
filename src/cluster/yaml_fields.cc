// Reading a cluster yaml's fields (yaml_fields.h).

#include "cluster/yaml_fields.h"

#include <fmt/format.h>

#include <cmath>

#include "util/closest_name.h"
#include "util/label.h"

namespace autopar::cluster {

Expected<YAML::Node> loadOneDocument(const std::string& yamlText) {
  try {
    std::vector<YAML::Node> documents = YAML::LoadAll(yamlText);
    if (documents.size() > 1) {
      return Error{fmt::format("holds {} documents (---); expected one cluster", documents.size())};
    }
    return documents.empty() ? YAML::Node() : documents.front();
  } catch (const YAML::Exception& error) {
    return Error{fmt::format("line {}: {}", error.mark.line + 1, error.msg)};
  }
}

std::string keyPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

Status checkKeys(const YAML::Node& map, const std::string& path,
                 const std::vector<std::string_view>& known) {
  if (!map.IsMap()) return {};
  std::vector<std::string> seen;
  for (const auto& entry : map) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return Error{fmt::format("{}: given twice; give it once", keyPath(path, key))};
    }
    seen.push_back(key);
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Error{fmt::format("{}: unknown key; did you mean {}? (docs/cluster-format.md)",
                               keyPath(path, key), closestName(key, known))};
    }
  }
  return {};
}

Expected<double> positiveNumber(const YAML::Node& node, const std::string& path,
                                const std::string& key, bool required, double fallback) {
  const std::string where = keyPath(path, key);
  if (!node.IsMap()) return Error{fmt::format("{}: expected a map holding {}", path, key)};
  const YAML::Node value = node[key];
  if (!value) {
    if (required) return Error{fmt::format("{}: missing; expected a positive number", where)};
    return fallback;
  }
  double number = 0;
  // Finite and below 2^40 (.inf, or 81.5e10 GiB scaled to bytes, would overflow what they size);
  // at least 0.001 of its unit (GiB, GB/s, TFLOP/s, us), below which a device or link would
  // turn step times into hundred-digit numbers (1e-300 GB/s).
  if (!value.IsScalar() || !YAML::convert<double>::decode(value, number) || !(number >= 1e-3) ||
      !(number < 1099511627776.0)) {
    return Error{fmt::format(
        "{}: expected a number from 0.001 to 2^40, got '{}'", where,
        value.IsScalar() ? value.Scalar() : "a " + std::string(value.IsMap() ? "map" : "list"))};
  }
  return number;
}

Expected<int> positiveCount(const YAML::Node& node, const std::string& path, const std::string& key,
                            bool required, int fallback) {
  auto number = positiveNumber(node, path, key, required, fallback);
  if (!number) return number.error();
  if (*number != std::floor(*number) || *number > kMaxDevices) {
    const std::string where = keyPath(path, key);
    return Error{fmt::format("{}: expected a whole number from 1 to {}, got {}", where, kMaxDevices,
                             *number)};
  }
  return static_cast<int>(*number);
}

Expected<std::string> text(const YAML::Node& node, const std::string& path,
                           const std::string& key) {
  const std::string where = keyPath(path, key);
  if (!node.IsMap()) return Error{fmt::format("{}: expected a map holding {}", path, key)};
  const YAML::Node value = node[key];
  if (!value || !value.IsScalar() || value.Scalar().empty()) {
    return Error{fmt::format("{}: expected a non-empty string", where)};
  }
  const std::string& scalar = value.Scalar();
  if (!isLabel(scalar)) return Error{notALabel(where)};
  return scalar;
}

}  // namespace autopar::cluster
