#include "frontend/onnx_opaque.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <exception>
#include <optional>

#include "frontend/onnx_import.h"

namespace autopar::frontend {

namespace {

// Constants whose values shape inference reads (Reshape's shape, Slice's starts, Resize's scales)
// hold one entry per dim. Larger ones are weights, on whose values no shape depends: the copy
// shape inference runs on keeps their dims and type but not their data.
constexpr int64_t kShapeConstantMaxElements = 64;

void indexTypes(const onnx::GraphProto& graph,
                std::unordered_map<std::string, const onnx::TypeProto*>& types) {
  for (const auto& value : graph.value_info()) types[value.name()] = &value.type();
  for (const auto& value : graph.output()) types[value.name()] = &value.type();
}

int64_t elementCount(const onnx::TensorProto& tensor) {
  int64_t count = 1;
  for (int64_t dim : tensor.dims()) count *= std::max<int64_t>(dim, 0);
  return count;
}

/// The graph's initializers, those past kShapeConstantMaxElements without their data.
void copyInitializers(const onnx::GraphProto& from, onnx::GraphProto& to) {
  for (const auto& initializer : from.initializer()) {
    onnx::TensorProto* copy = to.add_initializer();
    if (elementCount(initializer) <= kShapeConstantMaxElements) {
      *copy = initializer;
      continue;
    }
    copy->set_name(initializer.name());
    copy->set_data_type(initializer.data_type());
    *copy->mutable_dims() = initializer.dims();
  }
}

/// A copy of `model` for shape inference: the graph inputs' dynamic dims get `dynamicDimValue`
/// (when positive), as the import gives them, and large initializers leave their data behind.
std::unique_ptr<onnx::ModelProto> inferenceCopy(const onnx::ModelProto& model,
                                                int64_t dynamicDimValue) {
  auto copy = std::make_unique<onnx::ModelProto>();
  copy->set_ir_version(model.ir_version());
  *copy->mutable_opset_import() = model.opset_import();
  *copy->mutable_functions() = model.functions();
  const onnx::GraphProto& graph = model.graph();
  onnx::GraphProto* target = copy->mutable_graph();
  target->set_name(graph.name());
  *target->mutable_node() = graph.node();
  *target->mutable_input() = graph.input();
  *target->mutable_output() = graph.output();
  *target->mutable_value_info() = graph.value_info();
  copyInitializers(graph, *target);
  if (dynamicDimValue <= 0) return copy;
  for (auto& input : *target->mutable_input()) {
    if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) continue;
    for (auto& dim : *input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (!dim.has_dim_value() || dim.dim_value() <= 0) dim.set_dim_value(dynamicDimValue);
    }
  }
  return copy;
}

/// The static type `type` gives, with named dims sized by `dimSizes`; the error reads after the
/// value's name.
Expected<ir::TensorType> staticTypeOf(const onnx::TypeProto& type,
                                      const std::unordered_map<std::string, int64_t>& dimSizes) {
  if (!type.has_tensor_type()) return Error{"is not a tensor"};
  const auto& tensor = type.tensor_type();
  if (tensor.elem_type() == onnx::TensorProto_DataType_UNDEFINED) {
    return Error{"has no known element type"};
  }
  auto dtype = onnxDType(tensor.elem_type());
  if (!dtype) {
    return Error{fmt::format("has element type {}, which autopar does not model",
                             onnx::TensorProto_DataType_Name(tensor.elem_type()))};
  }
  if (!tensor.has_shape()) return Error{"has no known shape"};
  ir::Shape shape;
  for (int dim = 0; dim < tensor.shape().dim_size(); ++dim) {
    const auto& size = tensor.shape().dim(dim);
    if (size.has_dim_value()) {
      if (size.dim_value() <= 0) {
        return Error{
            fmt::format("has dim {} of size {}, expected a positive size", dim, size.dim_value())};
      }
      shape.push_back(size.dim_value());
      continue;
    }
    auto named = dimSizes.find(size.dim_param());
    if (size.has_dim_param() && named != dimSizes.end()) {
      shape.push_back(named->second);
      continue;
    }
    const std::string label =
        size.dim_param().empty() ? "" : fmt::format(" ('{}')", size.dim_param());
    return Error{fmt::format("has a dynamic dim {}{}", dim, label)};
  }
  return ir::TensorType{std::move(shape), *dtype};
}

Error unknownOutputType(int index, const std::string& name, const Error& reason) {
  return Error{fmt::format(
      "unsupported ONNX op, and output {} ('{}') {}; to replicate the op, give each of its outputs "
      "a static shape in the graph's value_info; supported: {}",
      index, name, reason.message, fmt::join(supportedOnnxOps(), ", "))};
}

}  // namespace

OnnxValueTypes::OnnxValueTypes(const onnx::ModelProto& model, int64_t dynamicDimValue)
    : model_(model), dynamicDimValue_(dynamicDimValue) {
  indexTypes(model.graph(), declared_);
  if (dynamicDimValue <= 0) return;
  for (const auto& input : model.graph().input()) {
    if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) continue;
    for (const auto& dim : input.type().tensor_type().shape().dim()) {
      if (dim.has_dim_param() && !dim.dim_param().empty()) {
        dimSizes_.emplace(dim.dim_param(), dynamicDimValue);
      }
    }
  }
}

OnnxValueTypes::~OnnxValueTypes() = default;

Expected<ir::TensorType> OnnxValueTypes::staticType(const std::string& name) {
  std::optional<Error> declaredError;
  if (auto it = declared_.find(name); it != declared_.end()) {
    auto type = staticTypeOf(*it->second, dimSizes_);
    if (type) return type;
    declaredError = type.error();
  }
  if (!inferredModel_) inferShapes();
  if (auto it = inferred_.find(name); it != inferred_.end())
    return staticTypeOf(*it->second, dimSizes_);
  if (declaredError) return *declaredError;
  return Error{"has no known shape"};
}

void OnnxValueTypes::inferShapes() {
  inferredModel_ = inferenceCopy(model_, dynamicDimValue_);
  try {
    onnx::shape_inference::InferShapes(*inferredModel_);
  } catch (const std::exception&) {
    // Inference stopped (its types conflict with the model's value_info, say): only the types the
    // model declares are known.
    return;
  }
  indexTypes(inferredModel_->graph(), inferred_);
}

void OpaqueNodeLog::add(const std::string& opType, const std::string& nodeLabel) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& entry) { return entry.opType == opType; });
  if (it == entries_.end()) {
    entries_.push_back(Entry{opType, nodeLabel, 1});
    return;
  }
  ++it->count;
}

std::vector<std::string> OpaqueNodeLog::warnings() const {
  std::vector<std::string> lines;
  for (const Entry& entry : entries_) {
    const std::string more =
        entry.count > 1 ? fmt::format(" and {} more", entry.count - 1) : std::string();
    lines.push_back(
        fmt::format("ONNX op '{}' (node '{}'{}) is not known; replicated on every device",
                    entry.opType, entry.firstNode, more));
  }
  return lines;
}

Status addOpaqueNode(OnnxContext& context, const onnx::NodeProto& node, const std::string& opType,
                     OnnxValueTypes& types) {
  ir::OpAttrs attrs;
  attrs.opaqueType = opType;
  std::vector<std::string> outputNames;
  for (int index = 0; index < node.output_size(); ++index) {
    const std::string& name = node.output(index);
    if (name.empty()) continue;
    auto type = types.staticType(name);
    if (!type) return unknownOutputType(index, name, type.error());
    attrs.outputTypes.push_back(std::move(*type));
    outputNames.push_back(name);
  }
  if (outputNames.empty()) return Error{"output 0 is missing"};
  std::vector<ir::TensorId> inputs;
  for (int index = 0; index < node.input_size(); ++index) {
    if (!OnnxContext::hasInput(node, index)) continue;  // an optional input left out
    auto tensor = context.input(node, index);
    if (!tensor) return tensor.error();
    inputs.push_back(*tensor);
  }
  return context.addOpWithOutputs(ir::OpKind::kOpaque, attrs, inputs, outputNames);
}

}  // namespace autopar::frontend
