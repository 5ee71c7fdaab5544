#pragma once
/// \file
/// Typed access to JSON object fields with one-line errors that carry the field's path, e.g.
///   auto name = json::required<std::string>(op, "name", "ops[2]");
///   // on failure: "ops[2].name: expected a string"
/// nlohmann::json checks types with exceptions; these wrap them into Expected values.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "util/expected.h"

namespace autopar::json {

template <class T>
constexpr const char* describe() {
  if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else if constexpr (std::is_same_v<T, bool>)
    return "true or false";
  else if constexpr (std::is_integral_v<T>)
    return "an integer";
  else if constexpr (std::is_floating_point_v<T>)
    return "a number";
  else if constexpr (std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<int>>)
    return "a list of integers";
  else if constexpr (std::is_same_v<T, std::vector<std::vector<int64_t>>> ||
                     std::is_same_v<T, std::vector<std::vector<int>>>)
    return "a list of lists of integers";
  else
    return "a value of another type";
}

/// `path` + "." + `key`, or just `key` at the top level.
inline std::string childPath(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

template <class T>
bool holds(const nlohmann::json& value) {
  if constexpr (std::is_same_v<T, std::string>)
    return value.is_string();
  else if constexpr (std::is_same_v<T, bool>)
    return value.is_boolean();
  else if constexpr (std::is_integral_v<T>)
    return value.is_number_integer();
  else if constexpr (std::is_floating_point_v<T>)
    return value.is_number();
  else {
    try {
      (void)value.get<T>();
      return true;
    } catch (const nlohmann::json::exception&) {
      return false;
    }
  }
}

/// Converts `value` (found at `path`) to T.
template <class T>
Expected<T> as(const nlohmann::json& value, const std::string& path) {
  if (!holds<T>(value)) return Error{path + ": expected " + std::string(describe<T>())};
  return value.get<T>();
}

/// The member `key` of `object` (at `path`), which must exist.
template <class T>
Expected<T> required(const nlohmann::json& object, std::string_view key, const std::string& path) {
  const std::string where = childPath(path, key);
  if (!object.is_object() || !object.contains(key)) {
    return Error{where + ": missing; expected " + std::string(describe<T>())};
  }
  return as<T>(object.at(std::string(key)), where);
}

/// The member `key` of `object`, or `fallback` when absent.
template <class T>
Expected<T> optional(const nlohmann::json& object, std::string_view key, const std::string& path,
                     T fallback) {
  if (!object.is_object() || !object.contains(key)) return fallback;
  return as<T>(object.at(std::string(key)), childPath(path, key));
}

}  // namespace autopar::json
