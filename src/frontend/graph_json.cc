#include "frontend/graph_json.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "frontend/op_attrs_json.h"
#include "frontend/shard_json.h"
#include "ir/op_semantics.h"
#include "util/json_fields.h"
#include "util/text_file.h"

namespace autopar::frontend {

using autopar::json::checkObject;
using autopar::json::childPath;
using autopar::json::indexPath;
using autopar::json::jsonTypeName;
using autopar::json::parseJsonText;
using autopar::json::readBool;
using autopar::json::readInt;
using autopar::json::readIntList;
using autopar::json::readPositiveIntList;
using autopar::json::readString;
using autopar::json::readStringList;
using autopar::json::requireField;

using nlohmann::json;

namespace {

/// State shared while reading the ops of one document.
struct ReadState {
  ir::Graph& graph;
  /// Where each tensor name was first defined ("tensors[0]", "ops[2].outputs[0]").
  std::unordered_map<std::string, std::string> definedAt;
  /// Output name -> index of the op producing it, for a hint when an op uses a tensor that a
  /// later op produces (ops must be in topological order).
  std::unordered_map<std::string, size_t> producerIndex;
  std::unordered_map<std::string, size_t> opIndexByName;
};

Status readHeader(const json& document, const std::string& sourceName, std::string& name) {
  auto status = checkObject(
      document, "", {"format", "version", "name", "description", "tensors", "ops", "blocks"});
  if (!status) return status;
  auto format = requireField(document, "", "format");
  if (!format) return format.error();
  auto formatName = readString(**format, "format");
  if (!formatName) return formatName.error();
  if (*formatName != kGraphFormat) {
    return Error{fmt::format("format: expected \"{}\", got \"{}\"", kGraphFormat, *formatName)};
  }
  auto version = requireField(document, "", "version");
  if (!version) return version.error();
  auto versionNumber = readInt(**version, "version");
  if (!versionNumber) return versionNumber.error();
  if (*versionNumber != kGraphFormatVersion) {
    return Error{fmt::format("version: unsupported version {} (this build reads version {})",
                             *versionNumber, kGraphFormatVersion)};
  }
  if (auto it = document.find("description"); it != document.end()) {
    if (auto text = readString(*it, "description"); !text) return text.error();
  }
  name = std::filesystem::path(sourceName).stem().string();
  if (auto it = document.find("name"); it != document.end()) {
    auto graphName = readString(*it, "name");
    if (!graphName) return graphName.error();
    name = *graphName;
  }
  if (name.empty()) name = "graph";
  return {};
}

Expected<std::string> readName(const json& object, const std::string& path) {
  auto field = requireField(object, path, "name");
  if (!field) return field.error();
  auto name = readString(**field, childPath(path, "name"));
  if (name && name->empty()) {
    return Error{fmt::format("{}: expected a non-empty string", childPath(path, "name"))};
  }
  return name;
}

Expected<ir::TensorRole> readRole(const json& value, const std::string& path) {
  auto role = readString(value, path);
  if (!role) return role.error();
  if (*role == "input") return ir::TensorRole::kInput;
  if (*role == "parameter") return ir::TensorRole::kParameter;
  if (*role == "activation") {
    return Error{fmt::format(
        "{}: activations are declared as ops' outputs; expected \"input\" or \"parameter\"", path)};
  }
  return Error{fmt::format("{}: expected \"input\" or \"parameter\", got \"{}\"", path, *role)};
}

Expected<ir::DType> readDType(const json& object, const std::string& path) {
  auto it = object.find("dtype");
  if (it == object.end()) return ir::DType::kF32;
  const std::string dtypePath = childPath(path, "dtype");
  auto dtypeName = readString(*it, dtypePath);
  if (!dtypeName) return dtypeName.error();
  auto dtype = ir::parseDType(*dtypeName);
  if (!dtype) return dtype.error().in(dtypePath);
  return dtype;
}

Status readTensor(const json& tensorJson, const std::string& path, ReadState& state) {
  auto status =
      checkObject(tensorJson, path, {"name", "shape", "dtype", "role", "parallel_optimizer"});
  if (!status) return status;
  auto name = readName(tensorJson, path);
  if (!name) return name.error();
  if (auto it = state.definedAt.find(*name); it != state.definedAt.end()) {
    return Error{fmt::format("{}: duplicate tensor name '{}' (first defined at {})",
                             childPath(path, "name"), *name, it->second)};
  }
  auto shapeField = requireField(tensorJson, path, "shape");
  if (!shapeField) return shapeField.error();
  auto shape = readPositiveIntList(**shapeField, childPath(path, "shape"));
  if (!shape) return shape.error();
  auto dtype = readDType(tensorJson, path);
  if (!dtype) return dtype.error();
  auto roleField = requireField(tensorJson, path, "role");
  if (!roleField) return roleField.error();
  auto role = readRole(**roleField, childPath(path, "role"));
  if (!role) return role.error();
  auto id = state.graph.addTensor(*name, ir::TensorType{*shape, *dtype}, *role);
  if (!id) return id.error().in(path);
  if (auto it = tensorJson.find("parallel_optimizer"); it != tensorJson.end()) {
    const std::string flagPath = childPath(path, "parallel_optimizer");
    if (*role != ir::TensorRole::kParameter) {
      return Error{fmt::format("{}: only parameters take this flag", flagPath)};
    }
    auto flag = readBool(*it, flagPath);
    if (!flag) return flag.error();
    state.graph.mutableTensor(*id).parallelOptimizer = *flag;
  }
  state.definedAt.emplace(*name, path);
  return {};
}

Expected<std::vector<ir::TensorId>> resolveInputs(const json& opJson, const std::string& path,
                                                  size_t opIndex, const ReadState& state) {
  auto field = requireField(opJson, path, "inputs");
  if (!field) return field.error();
  const std::string inputsPath = childPath(path, "inputs");
  auto names = readStringList(**field, inputsPath);
  if (!names) return names.error();
  std::vector<ir::TensorId> ids;
  for (size_t i = 0; i < names->size(); ++i) {
    const std::string& name = (*names)[i];
    if (auto id = state.graph.findTensor(name)) {
      ids.push_back(*id);
      continue;
    }
    auto later = state.producerIndex.find(name);
    if (later != state.producerIndex.end() && later->second >= opIndex) {
      return Error{fmt::format(
          "{}: tensor '{}' is produced by a later op (ops[{}]); list ops in topological order",
          indexPath(inputsPath, i), name, later->second)};
    }
    return Error{fmt::format("{}: unknown tensor '{}'", indexPath(inputsPath, i), name)};
  }
  return ids;
}

Expected<std::vector<std::string>> readOutputNames(const json& opJson, const std::string& path,
                                                   const ir::OpKind kind, size_t numInferred,
                                                   const ReadState& state) {
  auto field = requireField(opJson, path, "outputs");
  if (!field) return field.error();
  const std::string outputsPath = childPath(path, "outputs");
  auto names = readStringList(**field, outputsPath);
  if (!names) return names.error();
  if (names->size() != numInferred) {
    return Error{fmt::format("{}: {} produces {} output(s), got {} name(s)", outputsPath,
                             ir::opKindName(kind), numInferred, names->size())};
  }
  for (size_t i = 0; i < names->size(); ++i) {
    const std::string& name = (*names)[i];
    if (name.empty()) {
      return Error{fmt::format("{}: expected a non-empty string", indexPath(outputsPath, i))};
    }
    if (auto it = state.definedAt.find(name); it != state.definedAt.end()) {
      return Error{fmt::format("{}: tensor '{}' is already defined (at {})",
                               indexPath(outputsPath, i), name, it->second)};
    }
  }
  return names;
}

Status checkOutputShapes(const json& opJson, const std::string& path,
                         const std::vector<ir::TensorType>& inferred) {
  auto it = opJson.find("output_shapes");
  if (it == opJson.end()) return {};
  const std::string shapesPath = childPath(path, "output_shapes");
  if (!it->is_array() || it->size() != inferred.size()) {
    return Error{fmt::format("{}: expected {} shape(s), one per output, got {}", shapesPath,
                             inferred.size(),
                             it->is_array() ? std::to_string(it->size()) : jsonTypeName(*it))};
  }
  for (size_t i = 0; i < inferred.size(); ++i) {
    auto shape = readIntList((*it)[i], indexPath(shapesPath, i));
    if (!shape) return shape.error();
    if (*shape != inferred[i].shape) {
      return Error{fmt::format("{}: declared {} but shape inference gives {}",
                               indexPath(shapesPath, i), ir::shapeToString(*shape),
                               ir::shapeToString(inferred[i].shape))};
    }
  }
  return {};
}

Expected<ir::OpKind> readKind(const json& opJson, const std::string& path) {
  auto field = requireField(opJson, path, "kind");
  if (!field) return field.error();
  const std::string kindPath = childPath(path, "kind");
  auto kindName = readString(**field, kindPath);
  if (!kindName) return kindName.error();
  auto kind = ir::parseOpKind(*kindName);
  if (!kind) return kind.error().in(kindPath);
  return kind;
}

Expected<ir::OpAttrs> readAttrs(const json& opJson, const std::string& path, ir::OpKind kind) {
  auto it = opJson.find("attrs");
  if (it == opJson.end()) return ir::OpAttrs{};
  return attrsFromJson(kind, *it, childPath(path, "attrs"));
}

Expected<std::string> readBlock(const json& opJson, const std::string& path) {
  auto it = opJson.find("block");
  if (it == opJson.end()) return std::string();
  return readString(*it, childPath(path, "block"));
}

/// The parts of an op read from JSON before it is added to the graph.
struct OpFields {
  std::string name;
  ir::OpKind kind = ir::OpKind::kAdd;
  ir::OpAttrs attrs;
  std::vector<ir::TensorId> inputs;
  std::string block;
  bool recompute = false;
  ir::Placement placement = ir::Placement::kDevice;
};

/// Seed 001's primitive recompute and primitive_target.
Status readOpExecution(const json& opJson, const std::string& path, OpFields& fields) {
  if (auto it = opJson.find("recompute"); it != opJson.end()) {
    auto recompute = readBool(*it, childPath(path, "recompute"));
    if (!recompute) return recompute.error();
    fields.recompute = *recompute;
  }
  if (auto it = opJson.find("placement"); it != opJson.end()) {
    const std::string placementPath = childPath(path, "placement");
    auto placement = readString(*it, placementPath);
    if (!placement) return placement.error();
    if (*placement != "device" && *placement != "host") {
      return Error{fmt::format("{}: expected \"device\" or \"host\", got \"{}\"", placementPath,
                               *placement)};
    }
    fields.placement = *placement == "host" ? ir::Placement::kHost : ir::Placement::kDevice;
  }
  return {};
}

Expected<OpFields> readOpFields(const json& opJson, const std::string& path, size_t index,
                                const ReadState& state) {
  auto status = checkObject(opJson, path,
                            {"name", "kind", "inputs", "outputs", "attrs", "block", "shard",
                             "output_shapes", "recompute", "placement"});
  if (!status) return status.error();
  OpFields fields;
  auto name = readName(opJson, path);
  if (!name) return name.error();
  if (auto it = state.opIndexByName.find(*name); it != state.opIndexByName.end()) {
    return Error{fmt::format("{}: duplicate op name '{}' (first used by ops[{}])",
                             childPath(path, "name"), *name, it->second)};
  }
  fields.name = *name;
  auto kind = readKind(opJson, path);
  if (!kind) return kind.error();
  fields.kind = *kind;
  auto inputs = resolveInputs(opJson, path, index, state);
  if (!inputs) return inputs.error();
  fields.inputs = std::move(*inputs);
  auto attrs = readAttrs(opJson, path, fields.kind);
  if (!attrs) return attrs.error();
  fields.attrs = std::move(*attrs);
  auto block = readBlock(opJson, path);
  if (!block) return block.error();
  fields.block = std::move(*block);
  if (auto status = readOpExecution(opJson, path, fields); !status) return status.error();
  return fields;
}

Status readOp(const json& opJson, size_t index, ReadState& state) {
  const std::string path = indexPath("ops", index);
  auto fields = readOpFields(opJson, path, index, state);
  if (!fields) return fields.error();
  std::vector<ir::TensorType> inputTypes;
  for (ir::TensorId id : fields->inputs) inputTypes.push_back(state.graph.tensor(id).type);
  auto inferred = ir::inferOutputTypes(fields->kind, fields->attrs, inputTypes);
  if (!inferred) return inferred.error().in(path);
  auto outputs = readOutputNames(opJson, path, fields->kind, inferred->size(), state);
  if (!outputs) return outputs.error();
  if (auto status = checkOutputShapes(opJson, path, *inferred); !status) return status;
  ir::StrategyCuts shard;
  if (auto it = opJson.find("shard"); it != opJson.end()) {
    auto cuts = shardFromJson(*it, childPath(path, "shard"), inputTypes);
    if (!cuts) return cuts.error();
    shard = std::move(*cuts);
  }
  auto id = state.graph.addOp(fields->name, fields->kind, fields->attrs, fields->inputs, *outputs,
                              fields->block);
  if (!id) return id.error().in(path);
  ir::Op& op = state.graph.mutableOp(*id);
  op.shard = std::move(shard);
  op.recompute = fields->recompute;
  op.placement = fields->placement;
  state.opIndexByName.emplace(fields->name, index);
  for (size_t i = 0; i < outputs->size(); ++i) {
    state.definedAt.emplace((*outputs)[i], indexPath(childPath(path, "outputs"), i));
  }
  return {};
}

/// "blocks": {"layer1": {"pipeline_stage": 0, "pipeline_segment": 1, "comm_fusion": 0,
/// "recompute": true}}: what a user sets on a Cell (seeds 001 and 004; the segment is the model
/// chunk of its stage under the interleaved schedule).
Status readBlocks(const json& blocks, ir::Graph& graph) {
  if (!blocks.is_object()) {
    return Error{fmt::format("blocks: expected an object, got {}", jsonTypeName(blocks))};
  }
  for (const auto& item : blocks.items()) {
    const std::string path = childPath("blocks", item.key());
    auto status = checkObject(item.value(), path,
                              {"pipeline_stage", "pipeline_segment", "comm_fusion", "recompute"});
    if (!status) return status;
    ir::BlockSettings settings;
    if (auto it = item.value().find("pipeline_stage"); it != item.value().end()) {
      auto stage = readInt(*it, childPath(path, "pipeline_stage"));
      if (!stage) return stage.error();
      settings.pipelineStage = static_cast<int>(*stage);
    }
    if (auto it = item.value().find("pipeline_segment"); it != item.value().end()) {
      auto segment = readInt(*it, childPath(path, "pipeline_segment"));
      if (!segment) return segment.error();
      settings.pipelineSegment = static_cast<int>(*segment);
    }
    if (auto it = item.value().find("comm_fusion"); it != item.value().end()) {
      auto fusion = readInt(*it, childPath(path, "comm_fusion"));
      if (!fusion) return fusion.error();
      settings.commFusion = static_cast<int>(*fusion);
    }
    if (auto it = item.value().find("recompute"); it != item.value().end()) {
      auto recompute = readBool(*it, childPath(path, "recompute"));
      if (!recompute) return recompute.error();
      settings.recompute = *recompute;
    }
    if (auto set = graph.setBlockSettings(item.key(), settings); !set) return set.error().in(path);
  }
  return {};
}

/// Maps every output name to the index of its op, skipping malformed entries (they are reported
/// when their op is read).
std::unordered_map<std::string, size_t> indexProducers(const json& ops) {
  std::unordered_map<std::string, size_t> producers;
  for (size_t i = 0; i < ops.size(); ++i) {
    auto outputs = ops[i].is_object() ? ops[i].find("outputs") : ops[i].end();
    if (outputs == ops[i].end() || !outputs->is_array()) continue;
    for (const auto& output : *outputs) {
      if (output.is_string()) producers.emplace(output.get<std::string>(), i);
    }
  }
  return producers;
}

Status readBody(const json& document, ReadState& state) {
  auto tensors = requireField(document, "", "tensors");
  if (!tensors) return tensors.error();
  if (!(*tensors)->is_array()) {
    return Error{fmt::format("tensors: expected an array, got {}", jsonTypeName(**tensors))};
  }
  for (size_t i = 0; i < (*tensors)->size(); ++i) {
    if (auto status = readTensor((**tensors)[i], indexPath("tensors", i), state); !status) {
      return status;
    }
  }
  auto ops = requireField(document, "", "ops");
  if (!ops) return ops.error();
  if (!(*ops)->is_array()) {
    return Error{fmt::format("ops: expected an array, got {}", jsonTypeName(**ops))};
  }
  state.producerIndex = indexProducers(**ops);
  for (size_t i = 0; i < (*ops)->size(); ++i) {
    if (auto status = readOp((**ops)[i], i, state); !status) return status;
  }
  if (auto it = document.find("blocks"); it != document.end()) return readBlocks(*it, state.graph);
  return {};
}

}  // namespace

Expected<ir::Graph> graphFromJson(const json& document, const std::string& sourceName) {
  std::string name;
  if (auto status = readHeader(document, sourceName, name); !status) {
    return status.error().in(sourceName);
  }
  ir::Graph graph(name);
  ReadState state{graph, {}, {}, {}};
  if (auto status = readBody(document, state); !status) return status.error().in(sourceName);
  return graph;
}

Expected<ir::Graph> parseGraphJson(const std::string& text, const std::string& sourceName) {
  auto document = parseJsonText(text);
  if (!document) return document.error().in(sourceName);
  return graphFromJson(*document, sourceName);
}

Expected<ir::Graph> readGraphJson(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return text.error();
  return parseGraphJson(*text, path);
}

}  // namespace autopar::frontend
