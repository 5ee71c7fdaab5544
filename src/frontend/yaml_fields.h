#pragma once
/// \file
/// Typed access to the scalars of a parsed YAML document, with errors that name the key path of
/// the offending field, for readers of YAML configs (MindFormers-style run yamls). Values are
/// read the way PyYAML reads them in MindFormers, so that a value MindFormers would see as a
/// string is not taken for a number here:
///   mem_coeff: 0.1      -> 0.1
///   mem_coeff: "0.1"    -> "parallel_config.mem_coeff: expected a positive number, got '0.1'
///                           (a quoted string)"
///   full_batch: True    -> true (YAML 1.1 booleans: true/false, yes/no, on/off, in lower,
///                           Capitalised or UPPER case)
/// A key that is absent or null (`batch_size:` or `batch_size: ~`) counts as not given.
/// The caller prefixes the source name ("run.yaml: ...") once, at the top.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "util/expected.h"

namespace autopar::frontend {

/// Parses YAML text. A syntax error becomes one line with a 1-based line and column, e.g.
/// "line 3, column 9: YAML syntax error: illegal map value". An empty text is a null document.
Expected<YAML::Node> parseYamlText(const std::string& text);

/// How a node reads in an error: a scalar as 'abc' (quoted ones as "'8' (a quoted string)"),
/// otherwise "a mapping", "a sequence" or "null".
std::string describeYamlNode(const YAML::Node& node);

/// True when the node is absent (undefined) or null, i.e. the key was not given a value.
bool isYamlUnset(const YAML::Node& node);

/// Follows `keys` from `root` ({"parallel_config", "mem_coeff"}). Returns an undefined node when
/// a key on the way is absent or null, and fails when a node on the way is not a mapping:
/// "parallel: expected a mapping, got 'yes'". `path` receives the dotted key path.
Expected<YAML::Node> findYamlNode(const YAML::Node& root, std::span<const std::string_view> keys,
                                  std::string& path);
Expected<YAML::Node> findYamlNode(const YAML::Node& root,
                                  std::initializer_list<std::string_view> keys, std::string& path);

/// Scalars; each fails with "path: expected <what>, got <describeYamlNode>".
Expected<bool> readYamlBool(const YAML::Node& node, const std::string& path);
Expected<std::string> readYamlString(const YAML::Node& node, const std::string& path);
/// A plain decimal integer that fits in int64 ("8"; not "8.0", not '"8"').
Expected<int64_t> readYamlInt(const YAML::Node& node, const std::string& path);
/// An integer >= 1: "path: expected a positive integer, got '0'".
Expected<int64_t> readYamlPositiveInt(const YAML::Node& node, const std::string& path);
/// A finite number > 0 written as a plain scalar ("0.1", "4", "1.e-5", "2e3").
Expected<double> readYamlPositiveNumber(const YAML::Node& node, const std::string& path);

/// Reads the value at `keys` with `reader` into `out` when the key is given; leaves `out` alone
/// when it is absent or null. Errors carry the dotted key path.
///   std::optional<int64_t> layers;
///   readYamlKey(root, {"model", "model_config", "num_layers"}, readYamlPositiveInt, layers);
template <class T>
Status readYamlKey(const YAML::Node& root, std::initializer_list<std::string_view> keys,
                   Expected<T> (*reader)(const YAML::Node&, const std::string&),
                   std::optional<T>& out) {
  std::string path;
  auto node = findYamlNode(root, keys, path);
  if (!node) return node.error();
  if (isYamlUnset(*node)) return {};
  auto value = reader(*node, path);
  if (!value) return value.error();
  out = std::move(*value);
  return {};
}

}  // namespace autopar::frontend
