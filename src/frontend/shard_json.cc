#include "frontend/shard_json.h"

#include <fmt/format.h>

#include <regex>

#include "util/json_fields.h"

namespace autopar::frontend {

using autopar::json::indexPath;
using autopar::json::jsonTypeName;
using autopar::json::parseJsonText;
using autopar::json::readPositiveIntList;

using nlohmann::json;

namespace {

/// Turns the seeds' tuple notation into JSON lists: "((2, 4), (8,))" -> "[[2, 4], [8]]".
/// The frontend may not use layout::parseStrategy (frontend depends on ir only), and this
/// rewrite lets nlohmann do the parsing.
Expected<json> tuplesToJson(const std::string& text, const std::string& path) {
  // Tuples and lists may mix, "([2, 4], (8,))", but each must close with its own bracket.
  std::string open;
  for (char c : text) {
    if (c == '(' || c == '[') open.push_back(c);
    if (c != ')' && c != ']') continue;
    if (open.empty() || open.back() != (c == ')' ? '(' : '[')) {
      return Error{fmt::format("{}: \"{}\": a '{}' closes no matching bracket", path, text, c)};
    }
    open.pop_back();
  }
  std::string lists = text;
  for (char& c : lists) {
    if (c == '(') c = '[';
    if (c == ')') c = ']';
  }
  // The tuple notation takes integers as written, "(08, 1)"; JSON does not take leading zeros.
  static const std::regex kLeadingZeros("\\b0+(\\d)");
  lists = std::regex_replace(lists, kLeadingZeros, "$1");
  // A trailing comma after an element, "(8,)" or "((2, 4),)"; a comma after nothing, "(,)",
  // stays and fails to parse.
  static const std::regex kTrailingComma("([\\d\\]])\\s*,\\s*\\]");
  // Until nothing changes: in "((2, 4,),)" the inner comma's match holds the bracket the outer
  // one needs.
  for (std::string before; before != lists;) {
    before = lists;
    lists = std::regex_replace(lists, kTrailingComma, "$1]");
  }
  // parseJsonText also refuses what nlohmann alone would not: a NUL byte, which ends its input.
  auto parsed = parseJsonText(lists);
  if (!parsed || !parsed->is_array()) {
    return Error{fmt::format("{}: cannot read \"{}\" as cuts; expected e.g. \"((2, 4), (4, 1))\"",
                             path, text)};
  }
  return std::move(*parsed);
}

}  // namespace

Expected<ir::StrategyCuts> shardFromJson(const json& value, const std::string& path,
                                         const std::vector<ir::TensorType>& inputTypes) {
  json lists = value;
  if (value.is_string()) {
    auto converted = tuplesToJson(value.get<std::string>(), path);
    if (!converted) return converted.error();
    lists = std::move(*converted);
  }
  if (!lists.is_array()) {
    return Error{
        fmt::format("{}: expected a list of cuts per input, got {}", path, jsonTypeName(lists))};
  }
  if (lists.size() != inputTypes.size()) {
    return Error{fmt::format("{}: expected one list of cuts per input ({} inputs), got {}", path,
                             inputTypes.size(), lists.size())};
  }
  ir::StrategyCuts cuts;
  for (size_t input = 0; input < lists.size(); ++input) {
    const std::string inputPath = indexPath(path, input);
    auto inputCuts = readPositiveIntList(lists[input], inputPath);
    if (!inputCuts) return inputCuts.error();
    const size_t rank = inputTypes[input].shape.size();
    if (inputCuts->size() != rank) {
      return Error{fmt::format("{}: expected one cut per dimension of inputs[{}] (rank {}), got {}",
                               inputPath, input, rank, inputCuts->size())};
    }
    cuts.push_back(std::move(*inputCuts));
  }
  return cuts;
}

json shardToJson(const ir::StrategyCuts& cuts) {
  json lists = json::array();
  for (const auto& inputCuts : cuts) lists.push_back(inputCuts);
  return lists;
}

}  // namespace autopar::frontend
