// Writing graph JSON: graphToJson, dumpGraphJson and writeGraphJson from graph_json.h.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <nlohmann/json.hpp>

#include "frontend/graph_json.h"
#include "frontend/op_attrs_json.h"
#include "frontend/shard_json.h"

namespace autopar::frontend {

using nlohmann::json;

namespace {

json tensorNames(const ir::Graph& graph, const std::vector<ir::TensorId>& ids) {
  json names = json::array();
  for (ir::TensorId id : ids) names.push_back(graph.tensor(id).name);
  return names;
}

json tensorToJson(const ir::Tensor& tensor) {
  json entry = json::object();
  entry["name"] = tensor.name;
  entry["shape"] = tensor.type.shape;
  entry["dtype"] = std::string(ir::dtypeName(tensor.type.dtype));
  entry["role"] = tensor.role == ir::TensorRole::kParameter ? "parameter" : "input";
  if (tensor.parallelOptimizer) entry["parallel_optimizer"] = *tensor.parallelOptimizer;
  return entry;
}

json opToJson(const ir::Graph& graph, const ir::Op& op) {
  json entry = json::object();
  entry["name"] = op.name;
  entry["kind"] = std::string(ir::opKindName(op.kind));
  entry["inputs"] = tensorNames(graph, op.inputs);
  entry["outputs"] = tensorNames(graph, op.outputs);
  if (json attrs = attrsToJson(op.kind, op.attrs); !attrs.empty()) entry["attrs"] = attrs;
  if (!op.block.empty()) entry["block"] = op.block;
  if (!op.shard.empty()) entry["shard"] = shardToJson(op.shard);
  if (op.recompute) entry["recompute"] = true;
  if (op.placement == ir::Placement::kHost) entry["placement"] = "host";
  json shapes = json::array();
  for (ir::TensorId id : op.outputs) shapes.push_back(graph.tensor(id).type.shape);
  entry["output_shapes"] = shapes;
  return entry;
}

/// The order keys are printed in: the order docs/graph-format.md introduces them. nlohmann::json
/// keeps object keys sorted, so the printer reorders them.
int keyRank(const std::string& key) {
  static constexpr std::array<std::string_view, 23> kOrder = {
      "format",         "version",     "name",        "description",
      "tensors",        "ops",         "blocks",      "kind",
      "shape",          "dtype",       "role",        "parallel_optimizer",
      "inputs",         "outputs",     "attrs",       "block",
      "shard",          "recompute",   "placement",   "output_shapes",
      "pipeline_stage", "comm_fusion", "manual_split"};
  auto it = std::find(kOrder.begin(), kOrder.end(), key);
  return static_cast<int>(it - kOrder.begin());
}

std::vector<std::string> orderedKeys(const json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  std::stable_sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
    return keyRank(a) < keyRank(b);
  });
  return keys;
}

/// One line: {"name": "x", "shape": [32, 784]}.
std::string dumpInline(const json& value) {
  if (value.is_object()) {
    std::vector<std::string> members;
    for (const auto& key : orderedKeys(value)) {
      members.push_back(fmt::format("{}: {}", json(key).dump(), dumpInline(value.at(key))));
    }
    return fmt::format("{{{}}}", fmt::join(members, ", "));
  }
  if (value.is_array()) {
    std::vector<std::string> elements;
    for (const auto& element : value) elements.push_back(dumpInline(element));
    return fmt::format("[{}]", fmt::join(elements, ", "));
  }
  return value.dump();
}

/// An array as one element per line, indented under its key.
std::string dumpLines(const json& array) {
  if (array.empty()) return "[]";
  std::vector<std::string> lines;
  for (const auto& element : array) lines.push_back("    " + dumpInline(element));
  return fmt::format("[\n{}\n  ]", fmt::join(lines, ",\n"));
}

}  // namespace

json graphToJson(const ir::Graph& graph) {
  json document = json::object();
  document["format"] = kGraphFormat;
  document["version"] = kGraphFormatVersion;
  document["name"] = graph.name();
  json tensors = json::array();
  for (const auto& tensor : graph.tensors()) {
    if (tensor.role != ir::TensorRole::kActivation) tensors.push_back(tensorToJson(tensor));
  }
  document["tensors"] = std::move(tensors);
  json ops = json::array();
  for (const auto& op : graph.ops()) ops.push_back(opToJson(graph, op));
  document["ops"] = std::move(ops);
  if (!graph.blockSettings().empty()) {
    json blocks = json::object();
    for (const auto& [scope, settings] : graph.blockSettings()) {
      json entry = json::object();
      if (settings.pipelineStage) entry["pipeline_stage"] = *settings.pipelineStage;
      if (settings.pipelineSegment) entry["pipeline_segment"] = *settings.pipelineSegment;
      if (settings.commFusion) entry["comm_fusion"] = *settings.commFusion;
      if (settings.recompute) entry["recompute"] = true;
      blocks[scope] = entry;
    }
    document["blocks"] = std::move(blocks);
  }
  return document;
}

std::string dumpGraphJson(const json& document) {
  if (!document.is_object()) return dumpInline(document) + "\n";
  std::vector<std::string> members;
  for (const auto& key : orderedKeys(document)) {
    const json& value = document.at(key);
    const std::string text = value.is_array() && (key == "tensors" || key == "ops")
                                 ? dumpLines(value)
                                 : dumpInline(value);
    members.push_back(fmt::format("  {}: {}", json(key).dump(), text));
  }
  return fmt::format("{{\n{}\n}}\n", fmt::join(members, ",\n"));
}

Status writeGraphJson(const ir::Graph& graph, const std::string& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return Error{fmt::format("{}: cannot open file for writing", path)};
  file << dumpGraphJson(graphToJson(graph));
  file.close();
  if (!file) return Error{fmt::format("{}: write error", path)};
  return {};
}

}  // namespace autopar::frontend
