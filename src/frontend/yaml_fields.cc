#include "frontend/yaml_fields.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "util/json_fields.h"

namespace autopar::frontend {

using autopar::json::childPath;

namespace {

// yaml-cpp tags plain (unquoted) scalars "?" and quoted ones "!" (YAML 1.2 non-specific tags).
bool isQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

Error typeError(const std::string& path, std::string_view expected, const YAML::Node& node) {
  return Error{fmt::format("{}: expected {}, got {}", path, expected, describeYamlNode(node))};
}

// PyYAML's YAML 1.1 booleans (resolver.py): yes/no, true/false, on/off in three spellings each.
constexpr std::array<std::string_view, 9> kTrueWords = {"yes",  "Yes", "YES", "true", "True",
                                                        "TRUE", "on",  "On",  "ON"};
constexpr std::array<std::string_view, 9> kFalseWords = {"no",    "No",  "NO",  "false", "False",
                                                         "FALSE", "off", "Off", "OFF"};

bool contains(const auto& words, std::string_view word) {
  for (std::string_view candidate : words) {
    if (candidate == word) return true;
  }
  return false;
}

}  // namespace

Expected<YAML::Node> parseYamlText(const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& error) {
    return Error{fmt::format("line {}, column {}: YAML syntax error: {}", error.mark.line + 1,
                             error.mark.column + 1, error.msg)};
  }
}

std::string describeYamlNode(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a sequence";
  if (isQuoted(node)) return fmt::format("'{}' (a quoted string)", node.Scalar());
  return fmt::format("'{}'", node.Scalar());
}

bool isYamlUnset(const YAML::Node& node) { return !node.IsDefined() || node.IsNull(); }

Expected<YAML::Node> findYamlNode(const YAML::Node& root,
                                  std::initializer_list<std::string_view> keys, std::string& path) {
  return findYamlNode(root, std::span<const std::string_view>(keys.begin(), keys.size()), path);
}

Expected<YAML::Node> findYamlNode(const YAML::Node& root, std::span<const std::string_view> keys,
                                  std::string& path) {
  path.clear();
  YAML::Node current = root;
  for (std::string_view key : keys) {
    if (isYamlUnset(current)) return YAML::Node(YAML::NodeType::Undefined);
    if (!current.IsMap()) {
      return typeError(path.empty() ? "top level" : path, "a mapping", current);
    }
    path = childPath(path, key);
    // A const lookup never inserts the key; reset() rebinds `current`, whereas operator= would
    // overwrite the node it refers to inside the document.
    const YAML::Node child = std::as_const(current)[std::string(key)];
    if (!child.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    current.reset(child);
  }
  return current;
}

Expected<bool> readYamlBool(const YAML::Node& node, const std::string& path) {
  if (node.IsScalar() && !isQuoted(node)) {
    if (contains(kTrueWords, node.Scalar())) return true;
    if (contains(kFalseWords, node.Scalar())) return false;
  }
  return typeError(path, "a boolean (true or false)", node);
}

Expected<std::string> readYamlString(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) return typeError(path, "a string", node);
  return node.Scalar();
}

Expected<int64_t> readYamlInt(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar() || isQuoted(node)) return typeError(path, "an integer", node);
  const std::string& text = node.Scalar();
  const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
  const char* end = text.data() + text.size();
  int64_t value = 0;
  auto [stop, status] = std::from_chars(begin, end, value);
  if (status != std::errc() || stop != end || begin == end) {
    return typeError(path, "an integer", node);
  }
  return value;
}

Expected<int64_t> readYamlPositiveInt(const YAML::Node& node, const std::string& path) {
  auto value = readYamlInt(node, path);
  if (!value || *value < 1) return typeError(path, "a positive integer", node);
  return value;
}

Expected<double> readYamlPositiveNumber(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar() || isQuoted(node) || node.Scalar().empty()) {
    return typeError(path, "a positive number", node);
  }
  const std::string& text = node.Scalar();
  char* stop = nullptr;
  const double value = std::strtod(text.c_str(), &stop);
  // strtod also reads "inf", "nan" and hex floats; isfinite drops the first two.
  if (stop != text.c_str() + text.size() || !std::isfinite(value) || !(value > 0)) {
    return typeError(path, "a positive number", node);
  }
  return value;
}

}  // namespace autopar::frontend
