#include "planner/configuration/profile_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/json_fields.h"
#include "util/text_file.h"

namespace autopar::planner {

using autopar::json::checkObject;
using autopar::json::childPath;
using autopar::json::indexPath;
using autopar::json::jsonTypeName;
using autopar::json::parseJsonText;
using autopar::json::readBool;
using autopar::json::readInt;
using autopar::json::readNumber;
using autopar::json::readPositiveInt;
using autopar::json::readString;
using autopar::json::requireField;

namespace {

using nlohmann::json;

Expected<double> seconds(const json& object, const std::string& path, const char* key) {
  auto field = requireField(object, path, key);
  if (!field) return field.error();
  auto value = readNumber(**field, childPath(path, key));
  if (!value) return value.error();
  if (*value < 0) {
    return Error{fmt::format("{}: expected seconds >= 0, got {}", childPath(path, key), *value)};
  }
  return *value;
}

Expected<int64_t> bytes(const json& object, const std::string& path, const char* key) {
  auto field = requireField(object, path, key);
  if (!field) return field.error();
  auto value = readInt(**field, childPath(path, key));
  if (!value) return value.error();
  if (*value < 0) {
    return Error{fmt::format("{}: expected bytes >= 0, got {}", childPath(path, key), *value)};
  }
  return *value;
}

Expected<MeasuredPart> readPart(const json& object, const std::string& path) {
  if (auto status = checkObject(object, path,
                                {"forward_s", "backward_s", "activation_bytes", "recompute_s",
                                 "recomputed_activation_bytes"});
      !status) {
    return status.error();
  }
  MeasuredPart part;
  auto forward = seconds(object, path, "forward_s");
  if (!forward) return forward.error();
  auto backward = seconds(object, path, "backward_s");
  if (!backward) return backward.error();
  auto activations = bytes(object, path, "activation_bytes");
  if (!activations) return activations.error();
  part = {*forward, *backward, *activations, std::nullopt, std::nullopt};
  if (object.contains("recompute_s")) {
    auto recompute = seconds(object, path, "recompute_s");
    if (!recompute) return recompute.error();
    part.recomputeSeconds = *recompute;
  }
  if (object.contains("recomputed_activation_bytes")) {
    auto kept = bytes(object, path, "recomputed_activation_bytes");
    if (!kept) return kept.error();
    part.recomputedActivationBytes = *kept;
  }
  return part;
}

Expected<BlockSetting> readSetting(const json& entry, const std::string& path) {
  BlockSetting setting;
  for (auto [key, target] : {std::pair{"tp", &setting.tp}, std::pair{"cp", &setting.cp},
                             std::pair{"mbs", &setting.mbs}}) {
    auto field = requireField(entry, path, key);
    if (!field) return field.error();
    auto value = readPositiveInt(**field, childPath(path, key));
    if (!value) return value.error();
    *target = *value;
  }
  if (entry.contains("sequence_parallel")) {
    auto flag = readBool(entry.at("sequence_parallel"), childPath(path, "sequence_parallel"));
    if (!flag) return flag.error();
    setting.sequenceParallel = *flag;
  }
  if (entry.contains("recompute")) {
    auto name = readString(entry.at("recompute"), childPath(path, "recompute"));
    if (!name) return name.error();
    if (*name != "none" && *name != "selective") {
      return Error{
          fmt::format("{}: expected none or selective (full recompute is measured by "
                      "recompute_s per layer), got '{}'",
                      childPath(path, "recompute"), *name)};
    }
    setting.recompute = *name == "selective" ? ir::Recompute::kSelective : ir::Recompute::kNone;
  }
  return setting;
}

Expected<MeasuredBlocks> readBlocks(const json& entry, const std::string& path) {
  MeasuredBlocks blocks;
  auto layers = requireField(entry, path, "layers");
  if (!layers) return layers.error();
  const std::string layersPath = childPath(path, "layers");
  if (auto status = checkObject(**layers, layersPath, {"llm", "vit"}); !status) {
    return status.error();
  }
  for (const auto& [stack, part] : (*layers)->items()) {
    auto measured = readPart(part, childPath(layersPath, stack));
    if (!measured) return measured.error();
    blocks.layers.emplace(stack, *measured);
  }
  if (!blocks.layers.contains("llm")) {
    return Error{fmt::format("{}: missing required field 'llm'", layersPath)};
  }
  for (auto [key, target] : {std::pair{"first", &blocks.first}, std::pair{"last", &blocks.last}}) {
    if (!entry.contains(key)) continue;
    auto measured = readPart(entry.at(key), childPath(path, key));
    if (!measured) return measured.error();
    *target = *measured;
  }
  return blocks;
}

/// The sampling cluster: "sampling": {"nnodes": N, "nproc_per_node": M}.
Status readSampling(const json& sampling, ProfileTable& table) {
  if (auto status = checkObject(sampling, "sampling", {"nnodes", "nproc_per_node"}); !status) {
    return status;
  }
  for (auto [key, target] :
       {std::pair{"nnodes", &table.nnodes}, std::pair{"nproc_per_node", &table.nprocPerNode}}) {
    if (!sampling.contains(key)) continue;
    auto value = readPositiveInt(sampling.at(key), childPath("sampling", key));
    if (!value) return value.error();
    *target = static_cast<int>(*value);
  }
  return {};
}

Expected<ProfileTable> parseTable(const json& document, int nnodes, int nprocPerNode) {
  if (auto status = checkObject(document, "", {"format", "model", "device", "sampling", "entries"});
      !status) {
    return status.error();
  }
  ProfileTable table;
  auto device = requireField(document, "", "device");
  if (!device) return device.error();
  auto name = readString(**device, "device");
  if (!name) return name.error();
  table.device = *name;
  if (document.contains("sampling")) {
    if (auto status = readSampling(document.at("sampling"), table); !status) return status.error();
  }
  if (nnodes > 0) table.nnodes = nnodes;
  if (nprocPerNode > 0) table.nprocPerNode = nprocPerNode;
  if (table.nprocPerNode <= 0) {
    return Error{
        "sampling.nproc_per_node: required (or --nproc-per-node): the devices per node of the "
        "cluster the blocks were measured on"};
  }
  auto entries = requireField(document, "", "entries");
  if (!entries) return entries.error();
  if (!(*entries)->is_array()) {
    return Error{fmt::format("entries: expected an array, got {}", jsonTypeName(**entries))};
  }
  for (size_t i = 0; i < (*entries)->size(); ++i) {
    const std::string path = indexPath("entries", i);
    const json& entry = (**entries)[i];
    if (auto status = checkObject(
            entry, path,
            {"tp", "cp", "sequence_parallel", "mbs", "recompute", "layers", "first", "last"});
        !status) {
      return status.error();
    }
    auto setting = readSetting(entry, path);
    if (!setting) return setting.error();
    if (setting->tp * setting->cp > table.nprocPerNode) {
      return Error{fmt::format(
          "{}: TP {} x CP {} = {} devices do not fit in one sampling node of {} (its tensor- and "
          "context-parallel traffic must stay inside a node to carry over)",
          path, setting->tp, setting->cp, setting->tp * setting->cp, table.nprocPerNode)};
    }
    auto blocks = readBlocks(entry, path);
    if (!blocks) return blocks.error();
    if (!table.entries.emplace(*setting, std::move(*blocks)).second) {
      return Error{fmt::format("{}: a second entry for the same setting", path)};
    }
  }
  return table;
}

}  // namespace

Expected<ProfileTable> parseProfileTable(const std::string& text, const std::string& sourceName,
                                         const std::string& device, int nnodes, int nprocPerNode) {
  auto document = parseJsonText(text);
  if (!document) return document.error().in(sourceName);
  auto table = parseTable(*document, nnodes, nprocPerNode);
  if (!table) return table.error().in(sourceName);
  if (table->device != device) {
    return Error{
        fmt::format("{}: device: the blocks were measured on {}, but the cluster's devices are {}",
                    sourceName, table->device, device)};
  }
  return table;
}

Expected<ProfileTable> readProfileTable(const std::string& path, const std::string& device,
                                        int nnodes, int nprocPerNode) {
  auto text = readTextFile(path);
  if (!text) return text.error();
  return parseProfileTable(*text, path, device, nnodes, nprocPerNode);
}

namespace {

nlohmann::ordered_json partToJson(const MeasuredPart& part) {
  nlohmann::ordered_json json{{"forward_s", part.forwardSeconds},
                              {"backward_s", part.backwardSeconds},
                              {"activation_bytes", part.activationBytes}};
  if (part.recomputeSeconds) json["recompute_s"] = *part.recomputeSeconds;
  if (part.recomputedActivationBytes) {
    json["recomputed_activation_bytes"] = *part.recomputedActivationBytes;
  }
  return json;
}

}  // namespace

std::string profileTableToJson(const ProfileTable& table, const std::string& model) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const auto& [setting, blocks] : table.entries) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::object();
    for (const auto& [stack, part] : blocks.layers) layers[stack] = partToJson(part);
    nlohmann::ordered_json entry{{"tp", setting.tp},
                                 {"cp", setting.cp},
                                 {"sequence_parallel", setting.sequenceParallel},
                                 {"mbs", setting.mbs},
                                 {"recompute", ir::recomputeName(setting.recompute)},
                                 {"layers", layers}};
    if (blocks.first) entry["first"] = partToJson(*blocks.first);
    if (blocks.last) entry["last"] = partToJson(*blocks.last);
    entries.push_back(entry);
  }
  nlohmann::ordered_json document{
      {"format", "autopar-block-profile/1"},
      {"model", model},
      {"device", table.device},
      {"sampling", {{"nnodes", table.nnodes}, {"nproc_per_node", table.nprocPerNode}}},
      {"entries", entries}};
  return document.dump(2) + "\n";
}

/// Per layer, the backward and the kept bytes: the 4-layer run minus the 2-layer run, halved;
/// the forward is timed op by op, so it is the layers' ops' own time over both runs' layers. The
/// embedding's and the head's forward and kept bytes are their ops' own (2-layer run); the
/// backward left after the layers' is shared between them in proportion to their forwards.
MeasuredBlocks differenceRuns(const SampledRun& two, const SampledRun& four, int64_t extraLayers) {
  auto perLayer = [&](double a, double b) { return std::max(0.0, (b - a) / extraLayers); };
  const double forward = (two.layers.forwardSeconds + four.layers.forwardSeconds) /
                         static_cast<double>(2 + 2 + extraLayers);
  MeasuredPart layer;
  layer.forwardSeconds = forward;
  layer.backwardSeconds = perLayer(two.backward, four.backward);
  layer.activationBytes = static_cast<int64_t>(perLayer(two.activation, four.activation));
  const SampledRun::Part& first = two.first;
  const SampledRun::Part& last = two.last;
  const double rest = std::max(0.0, two.backward - 2 * layer.backwardSeconds);
  const double ends = first.forwardSeconds + last.forwardSeconds;
  const double firstShare = ends > 0 ? first.forwardSeconds / ends : 0.5;
  MeasuredBlocks blocks;
  blocks.layers["llm"] = layer;
  auto part = [](double forwardSeconds, double backwardSeconds, int64_t bytes) {
    MeasuredPart measured;
    measured.forwardSeconds = forwardSeconds;
    measured.backwardSeconds = backwardSeconds;
    measured.activationBytes = std::max<int64_t>(bytes, 0);
    return measured;
  };
  blocks.first = part(first.forwardSeconds, rest * firstShare, first.keptBytes);
  blocks.last = part(last.forwardSeconds, rest * (1 - firstShare), last.keptBytes);
  return blocks;
}

}  // namespace autopar::planner
