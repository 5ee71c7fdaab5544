#include "util/json_fields.h"

#include <fmt/format.h>

#include <limits>

#include "util/label.h"

namespace autopar::json {

using Json = nlohmann::json;

std::string childPath(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return fmt::format("{}.{}", path, key);
}

std::string indexPath(const std::string& path, size_t index) {
  return fmt::format("{}[{}]", path, index);
}

std::string jsonTypeName(const Json& value) {
  if (value.is_number()) return "number";
  return value.type_name();
}

namespace {

/// nlohmann's what() reads "[json.exception.parse_error.101] parse error at line 3, column 7:
/// syntax error ..."; keep only the part after the location.
std::string parseErrorDetail(const std::string& what) {
  const auto at = what.find("parse error");
  const auto colon = what.find(": ", at == std::string::npos ? 0 : at);
  std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
  std::replace(detail.begin(), detail.end(), '\n', ' ');
  return detail;
}

/// 1-based line of the byte nlohmann stopped at (its `byte` is 1-based too).
size_t lineOfByte(const std::string& text, size_t byte) {
  const size_t end = std::min(text.size(), byte == 0 ? 0 : byte - 1);
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + end, '\n'));
}

Error typeError(const std::string& path, std::string_view expected, const Json& value) {
  return Error{fmt::format("{}: expected {}, got {}", path, expected, jsonTypeName(value))};
}

}  // namespace

Expected<Json> parseJsonText(const std::string& text) {
  // nlohmann's parser ends its input at a NUL byte; what follows would go unread.
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    return Error{fmt::format("line {}: JSON parse error: a NUL byte", lineOfByte(text, nul + 1))};
  }
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& error) {
    return Error{fmt::format("line {}: JSON parse error: {}", lineOfByte(text, error.byte),
                             parseErrorDetail(error.what()))};
  } catch (const Json::exception& error) {
    // A number beyond double's range ("1e400"): nlohmann reports it as out_of_range.
    return Error{fmt::format("JSON parse error: {}", error.what())};
  }
}

Status checkObject(const Json& value, const std::string& path,
                   std::initializer_list<std::string_view> allowed) {
  const std::string where = path.empty() ? "top level" : path;
  if (!value.is_object()) return typeError(where, "an object", value);
  for (const auto& item : value.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) != allowed.end()) continue;
    return Error{fmt::format("{}: unknown field '{}' (expected one of: {})", where, item.key(),
                             fmt::join(allowed, ", "))};
  }
  return {};
}

Expected<const Json*> requireField(const Json& object, const std::string& path,
                                   std::string_view key) {
  auto it = object.find(key);
  if (it == object.end()) {
    return Error{
        fmt::format("{}: missing required field '{}'", path.empty() ? "top level" : path, key)};
  }
  return &*it;
}

Expected<std::string> readString(const Json& value, const std::string& path) {
  if (!value.is_string()) return typeError(path, "a string", value);
  return value.get<std::string>();
}

Expected<std::string> readLabel(const Json& value, const std::string& path) {
  auto text = readString(value, path);
  if (text && !isLabel(*text)) return Error{notALabel(path)};
  return text;
}

Expected<bool> readBool(const Json& value, const std::string& path) {
  if (!value.is_boolean()) return typeError(path, "true or false", value);
  return value.get<bool>();
}

Expected<int64_t> readInt(const Json& value, const std::string& path) {
  if (value.is_number_unsigned()) {
    const auto unsignedValue = value.get<uint64_t>();
    if (unsignedValue > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error{fmt::format("{}: {} does not fit in a 64-bit integer", path, unsignedValue)};
    }
    return static_cast<int64_t>(unsignedValue);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number()) {
    return Error{fmt::format("{}: expected an integer, got {}", path, value.dump())};
  }
  return typeError(path, "an integer", value);
}

Expected<int64_t> readPositiveInt(const Json& value, const std::string& path) {
  auto number = readInt(value, path);
  if (!number) return number;
  if (*number < 1)
    return Error{fmt::format("{}: expected a positive integer, got {}", path, *number)};
  return number;
}

Expected<double> readNumber(const Json& value, const std::string& path) {
  if (!value.is_number()) return typeError(path, "a number", value);
  return value.get<double>();
}

namespace {

template <class T, class ReadElement>
Expected<std::vector<T>> readList(const Json& value, const std::string& path,
                                  std::string_view expected, ReadElement readElement) {
  if (!value.is_array()) return typeError(path, expected, value);
  std::vector<T> elements;
  elements.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    auto element = readElement(value[i], indexPath(path, i));
    if (!element) return element.error();
    elements.push_back(std::move(*element));
  }
  return elements;
}

}  // namespace

Expected<std::vector<int64_t>> readIntList(const Json& value, const std::string& path) {
  return readList<int64_t>(value, path, "an array of integers", readInt);
}

Expected<std::vector<int64_t>> readPositiveIntList(const Json& value, const std::string& path) {
  return readList<int64_t>(value, path, "an array of positive integers", readPositiveInt);
}

Expected<std::vector<std::string>> readStringList(const Json& value, const std::string& path) {
  return readList<std::string>(value, path, "an array of strings", readString);
}

}  // namespace autopar::json
