#include "frontend/onnx_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

#include "frontend/onnx_context.h"
#include "frontend/onnx_opaque.h"
#include "util/text_file.h"

namespace autopar::frontend {

namespace {

Expected<int64_t> defaultDomainOpset(const onnx::ModelProto& model) {
  for (const auto& entry : model.opset_import()) {
    if (entry.domain().empty() || entry.domain() == "ai.onnx") return entry.version();
  }
  return Error{"the model imports no opset of the default ONNX domain"};
}

/// Every value name the graph defines, so helper tensors can avoid them.
std::unordered_set<std::string> valueNames(const onnx::GraphProto& graph) {
  std::unordered_set<std::string> names;
  for (const auto& input : graph.input()) names.insert(input.name());
  for (const auto& initializer : graph.initializer()) names.insert(initializer.name());
  for (const auto& node : graph.node()) names.insert(node.output().begin(), node.output().end());
  return names;
}

Expected<ir::Shape> inputShape(const onnx::TypeProto_Tensor& type,
                               const OnnxImportOptions& options) {
  if (!type.has_shape()) return Error{"has no shape; a static shape is needed"};
  ir::Shape shape;
  for (int dim = 0; dim < type.shape().dim_size(); ++dim) {
    const auto& size = type.shape().dim(dim);
    if (size.has_dim_value() && size.dim_value() > 0) {
      shape.push_back(size.dim_value());
    } else if (options.dynamicDimValue > 0) {
      shape.push_back(options.dynamicDimValue);
    } else if (size.has_dim_value()) {
      return Error{fmt::format("dim {} is {}, expected a positive size", dim, size.dim_value())};
    } else {
      const std::string label =
          size.dim_param().empty() ? "" : fmt::format(" ('{}')", size.dim_param());
      return Error{fmt::format(
          "dim {}{} is dynamic; set a size for dynamic dims (OnnxImportOptions::dynamicDimValue)",
          dim, label)};
    }
  }
  return shape;
}

/// Graph inputs that no initializer backs become IR inputs.
Status addGraphInputs(const onnx::GraphProto& onnxGraph, const OnnxImportOptions& options,
                      OnnxContext& context) {
  std::unordered_set<std::string> initializers;
  for (const auto& initializer : onnxGraph.initializer()) initializers.insert(initializer.name());
  for (const auto& input : onnxGraph.input()) {
    if (initializers.contains(input.name())) continue;
    const std::string where = fmt::format("graph input '{}'", input.name());
    if (!input.type().has_tensor_type()) return Error{"expected a tensor type"}.in(where);
    const auto& tensorType = input.type().tensor_type();
    auto dtype = onnxDType(tensorType.elem_type());
    if (!dtype) return dtype.error().in(where);
    auto shape = inputShape(tensorType, options);
    if (!shape) return shape.error().in(where);
    auto id = context.graph().addTensor(input.name(), {*shape, *dtype}, ir::TensorRole::kInput);
    if (!id) return id.error();
    context.bindValue(input.name(), *id);
  }
  return {};
}

/// The IR name of a node's op: its name, or "<op_type>_<index>"; the index is appended when
/// the name is already taken.
std::string opNameOf(const onnx::NodeProto& node, int index, const ir::Graph& graph) {
  std::string name =
      node.name().empty() ? fmt::format("{}_{}", node.op_type(), index) : node.name();
  if (graph.findOp(name)) name = fmt::format("{}_{}", name, index);
  return name;
}

/// The mapper of a node's op, or null when autopar does not translate it.
OnnxOpMapper mapperOf(const onnx::NodeProto& node) {
  const auto& mappers = onnxOpMappers();
  const bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
  auto mapper = defaultDomain ? mappers.find(node.op_type()) : mappers.end();
  return mapper == mappers.end() ? nullptr : mapper->second;
}

/// Outputs past the first (Dropout's mask, LayerNormalization's statistics) have no IR tensor;
/// a node that reads one gets an error saying so.
void markUnmodelledOutputs(const onnx::NodeProto& node, const std::string& label,
                           OnnxContext& context) {
  for (int index = 1; index < node.output_size(); ++index) {
    const std::string& name = node.output(index);
    if (name.empty() || context.isBound(name)) continue;
    context.markUnavailable(name, fmt::format("output {} of node '{}' ({}) is not modelled", index,
                                              label, node.op_type()));
  }
}

/// Maps every node; a node autopar does not translate becomes an Opaque op (onnx_opaque.h),
/// logged in `opaqueNodes`.
Status importNodes(const onnx::GraphProto& onnxGraph, OnnxContext& context, OnnxValueTypes& types,
                   OpaqueNodeLog& opaqueNodes) {
  for (int index = 0; index < onnxGraph.node_size(); ++index) {
    const onnx::NodeProto& node = onnxGraph.node(index);
    const std::string opName = opNameOf(node, index, context.graph());
    const std::string label = node.name().empty() ? opName : node.name();
    const std::string opType = node.domain().empty()
                                   ? node.op_type()
                                   : fmt::format("{}.{}", node.domain(), node.op_type());
    context.beginNode(opName);
    const OnnxOpMapper mapper = mapperOf(node);
    const Status status =
        mapper != nullptr ? mapper(context, node) : addOpaqueNode(context, node, opType, types);
    if (!status) return status.error().in(fmt::format("node '{}' (op_type {})", label, opType));
    if (mapper == nullptr) opaqueNodes.add(opType, label);
    markUnmodelledOutputs(node, label, context);
  }
  return {};
}

/// ONNX (protobuf 2) does not require its strings to be UTF-8, but plans and graph JSON do: a
/// name that is not would only fail later, when a plan is written. nlohmann validates UTF-8 as it
/// serialises, so it does the check rather than a hand-written decoder.
bool isUtf8(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

Status checkNamesAreUtf8(const ir::Graph& graph) {
  if (!isUtf8(graph.name())) return Error{"the graph's name is not valid UTF-8"};
  for (const ir::Op& op : graph.ops()) {
    if (!isUtf8(op.name)) return Error{fmt::format("node {}: its name is not valid UTF-8", op.id)};
  }
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (!isUtf8(tensor.name)) {
      return Error{fmt::format("tensor {}: its name is not valid UTF-8", tensor.id)};
    }
  }
  return {};
}

/// Imports the model; the warnings for its Opaque ops go to `warnings`, one line per op type.
Expected<ir::Graph> importModel(const onnx::ModelProto& model, const std::string& sourceName,
                                const OnnxImportOptions& options,
                                std::vector<std::string>& warnings) {
  if (!model.has_graph()) return Error{"not an ONNX model: it has no graph"};
  auto opset = defaultDomainOpset(model);
  if (!opset) return opset.error();
  const onnx::GraphProto& onnxGraph = model.graph();
  std::string name = onnxGraph.name();
  if (name.empty()) name = std::filesystem::path(sourceName).stem().string();
  ir::Graph graph(name.empty() ? "onnx" : name);
  OnnxContext context(graph, *opset, valueNames(onnxGraph));
  if (auto status = addGraphInputs(onnxGraph, options, context); !status) return status.error();
  for (const auto& initializer : onnxGraph.initializer()) {
    context.addConstant(initializer.name(), &initializer);
  }
  OnnxValueTypes types(model, options.dynamicDimValue);
  OpaqueNodeLog opaqueNodes;
  if (auto status = importNodes(onnxGraph, context, types, opaqueNodes); !status) {
    return status.error();
  }
  if (graph.ops().empty()) return Error{"the graph has no ops to plan"};
  if (auto status = checkNamesAreUtf8(graph); !status) return status.error();
  warnings = opaqueNodes.warnings();
  return graph;
}

/// The default warning sink. One command may import a file several times (a search builds a
/// fresh graph for each configuration it prices), so each line is printed once per process.
void printWarning(const std::string& line) {
  static std::mutex mutex;
  static std::unordered_set<std::string> printed;
  const std::lock_guard lock(mutex);
  if (!printed.insert(line).second) return;
  fmt::print(stderr, "autopar: warning: {}\n", line);
}

}  // namespace

const std::unordered_map<std::string, OnnxOpMapper>& onnxOpMappers() {
  static const auto kMappers = [] {
    std::unordered_map<std::string, OnnxOpMapper> mappers;
    addMathOpMappers(mappers);
    addShapeOpMappers(mappers);
    return mappers;
  }();
  return kMappers;
}

const std::vector<std::string>& supportedOnnxOps() {
  static const auto kNames = [] {
    std::vector<std::string> names;
    for (const auto& [opType, mapper] : onnxOpMappers()) names.push_back(opType);
    std::sort(names.begin(), names.end());
    return names;
  }();
  return kNames;
}

Expected<ir::Graph> parseOnnx(const std::string& bytes, const std::string& sourceName,
                              const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return Error{fmt::format("{}: not a valid ONNX file (protobuf decoding failed)", sourceName)};
  }
  std::vector<std::string> warnings;
  auto graph = importModel(model, sourceName, options, warnings);
  if (!graph) return graph.error().in(sourceName);
  for (const std::string& warning : warnings) {
    const std::string line = fmt::format("{}: {}", sourceName, warning);
    if (options.onWarning) {
      options.onWarning(line);
    } else {
      printWarning(line);
    }
  }
  return graph;
}

Expected<ir::Graph> readOnnx(const std::string& path, const OnnxImportOptions& options) {
  auto bytes = readTextFile(path);  // bounded like every input; the bytes are binary
  if (!bytes) return bytes.error();
  return parseOnnx(*bytes, path, options);
}

}  // namespace autopar::frontend
