#include "frontend/shard_json.h"

#include <fmt/format.h>

#include <regex>

#include "frontend/json_fields.h"

namespace autopar::frontend {

using nlohmann::json;

namespace {

/// Turns the seeds' tuple notation into JSON lists: "((2, 4), (8,))" -> "[[2, 4], [8]]".
/// The frontend may not use layout::parseStrategy (frontend depends on ir only), and this
/// rewrite lets nlohmann do the parsing.
Expected<json> tuplesToJson(const std::string& text, const std::string& path) {
  std::string lists = text;
  for (char& c : lists) {
    if (c == '(') c = '[';
    if (c == ')') c = ']';
  }
  static const std::regex kTrailingComma(",\\s*\\]");
  lists = std::regex_replace(lists, kTrailingComma, "]");
  json parsed = json::parse(lists, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_array()) {
    return Error{fmt::format("{}: cannot read \"{}\" as cuts; expected e.g. \"((2, 4), (4, 1))\"",
                             path, text)};
  }
  return parsed;
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
