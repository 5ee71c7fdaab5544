#include "frontend/mindspore_strategy.h"

#include <fmt/format.h>

#include "util/json_fields.h"
#include "util/limits.h"
#include "util/text_file.h"

namespace autopar::frontend {

using autopar::json::checkObject;
using autopar::json::childPath;
using autopar::json::indexPath;
using autopar::json::jsonTypeName;
using autopar::json::parseJsonText;
using autopar::json::readInt;
using autopar::json::readPositiveIntList;
using autopar::json::requireField;

namespace {

/// An op's entry: {"stage": S, "parallel_strategy": [[...], ...]}.
Expected<OpStrategyEntry> readEntry(const std::string& op, const nlohmann::json& value,
                                    const std::string& path) {
  if (auto status = checkObject(value, path, {"stage", "parallel_strategy"}); !status) {
    return status.error();
  }
  OpStrategyEntry entry{op, {}, 0};
  auto stage = requireField(value, path, "stage");
  if (!stage) return stage.error();
  auto stageValue = readInt(**stage, childPath(path, "stage"));
  if (!stageValue) return stageValue.error();
  if (*stageValue < 0 || *stageValue >= limits::kMaxDevices) {
    return Error{fmt::format("{}: expected a stage from 0 to {}, got {}", childPath(path, "stage"),
                             limits::kMaxDevices - 1, *stageValue)};
  }
  entry.stage = static_cast<int>(*stageValue);
  const std::string strategyPath = childPath(path, "parallel_strategy");
  auto strategy = requireField(value, path, "parallel_strategy");
  if (!strategy) return strategy.error();
  if (!(*strategy)->is_array()) {
    return Error{fmt::format("{}: expected a list of per-input splits, got {}", strategyPath,
                             jsonTypeName(**strategy))};
  }
  for (size_t i = 0; i < (*strategy)->size(); ++i) {
    auto cuts = readPositiveIntList((**strategy)[i], indexPath(strategyPath, i));
    if (!cuts) return cuts.error();
    for (size_t d = 0; d < cuts->size(); ++d) {
      if ((*cuts)[d] > limits::kMaxDevices) {
        return Error{fmt::format("{}[{}]: {} is above the limit {} (docs/limits.md)",
                                 indexPath(strategyPath, i), d, (*cuts)[d], limits::kMaxDevices)};
      }
    }
    entry.strategy.push_back(std::move(*cuts));
  }
  return entry;
}

Expected<std::vector<OpStrategyEntry>> readDocument(const nlohmann::json& document) {
  if (!document.is_object()) {
    return Error{fmt::format("expected an object with parallel_strategy_item, got {}",
                             jsonTypeName(document))};
  }
  // What MindSpore writes beside the input strategies: refused rather than dropped.
  for (const char* key : {"parallel_out_strategy_item", "parallel_layout_value_item",
                          "parallel_out_layout_value_item", "parallel_newshape_layout_value_item",
                          "parallel_out_newshape_layout_value_item", "parallel_layout_item"}) {
    if (document.contains(key) && !document.at(key).empty()) {
      return Error{
          fmt::format("{}: output strategies and tensor layouts are not read; only "
                      "parallel_strategy_item (input strategies) is",
                      key)};
    }
  }
  auto items = requireField(document, "", "parallel_strategy_item");
  if (!items) return items.error();
  if (!(*items)->is_object()) {
    return Error{fmt::format("parallel_strategy_item: expected an object keyed by op name, got {}",
                             jsonTypeName(**items))};
  }
  std::vector<OpStrategyEntry> entries;
  for (const auto& [op, value] : (*items)->items()) {
    auto entry = readEntry(op, value, childPath("parallel_strategy_item", op));
    if (!entry) return entry.error();
    entries.push_back(std::move(*entry));
  }
  return entries;
}

}  // namespace

Expected<std::vector<OpStrategyEntry>> readOpStrategyFile(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return text.error();
  auto document = parseJsonText(*text);
  if (!document) return document.error().in(path);
  auto entries = readDocument(*document);
  if (!entries) return entries.error().in(path);
  return entries;
}

}  // namespace autopar::frontend
