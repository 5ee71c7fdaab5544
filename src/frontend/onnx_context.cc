#include "frontend/onnx_context.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <bit>
#include <cstring>

namespace autopar::frontend {

namespace {

// raw_data holds little-endian values (onnx.proto); they are copied as they are.
static_assert(std::endian::native == std::endian::little,
              "raw_data decoding assumes little-endian");

struct DTypeMapping {
  int32_t onnxCode;
  ir::DType dtype;
};

constexpr DTypeMapping kDTypes[] = {
    {onnx::TensorProto_DataType_FLOAT, ir::DType::kF32},
    {onnx::TensorProto_DataType_FLOAT16, ir::DType::kF16},
    {onnx::TensorProto_DataType_BFLOAT16, ir::DType::kBF16},
    {onnx::TensorProto_DataType_INT64, ir::DType::kI64},
    {onnx::TensorProto_DataType_INT32, ir::DType::kI32},
    {onnx::TensorProto_DataType_INT8, ir::DType::kI8},
    {onnx::TensorProto_DataType_BOOL, ir::DType::kBool},
};

std::string dtypeCodeName(int32_t code) {
  const std::string& name = onnx::TensorProto_DataType_Name(code);
  return name.empty() ? fmt::format("code {}", code) : name;
}

/// Values of a raw_data field of `count` elements of type T.
template <class T>
Expected<std::vector<T>> rawValues(const onnx::TensorProto& tensor, size_t count) {
  const std::string& raw = tensor.raw_data();
  if (raw.size() != count * sizeof(T)) {
    return Error{fmt::format("constant '{}': raw_data has {} bytes, expected {}", tensor.name(),
                             raw.size(), count * sizeof(T))};
  }
  std::vector<T> values(count);
  std::memcpy(values.data(), raw.data(), raw.size());
  return values;
}

size_t elementCount(const onnx::TensorProto& tensor) {
  size_t count = 1;
  for (int64_t dim : tensor.dims()) count *= static_cast<size_t>(dim);
  return count;
}

Expected<std::vector<int64_t>> intValues(const onnx::TensorProto& tensor) {
  const int32_t type = tensor.data_type();
  const bool raw = tensor.has_raw_data();
  if (type == onnx::TensorProto_DataType_INT64) {
    if (raw) return rawValues<int64_t>(tensor, elementCount(tensor));
    return std::vector<int64_t>(tensor.int64_data().begin(), tensor.int64_data().end());
  }
  if (type == onnx::TensorProto_DataType_INT32) {
    if (!raw) return std::vector<int64_t>(tensor.int32_data().begin(), tensor.int32_data().end());
    auto values = rawValues<int32_t>(tensor, elementCount(tensor));
    if (!values) return values.error();
    return std::vector<int64_t>(values->begin(), values->end());
  }
  return Error{fmt::format("constant '{}': expected INT64 or INT32 values, got {}", tensor.name(),
                           dtypeCodeName(type))};
}

Expected<std::vector<double>> floatValues(const onnx::TensorProto& tensor) {
  const int32_t type = tensor.data_type();
  const bool raw = tensor.has_raw_data();
  if (type == onnx::TensorProto_DataType_FLOAT) {
    if (!raw) return std::vector<double>(tensor.float_data().begin(), tensor.float_data().end());
    auto values = rawValues<float>(tensor, elementCount(tensor));
    if (!values) return values.error();
    return std::vector<double>(values->begin(), values->end());
  }
  if (type == onnx::TensorProto_DataType_DOUBLE) {
    if (raw) return rawValues<double>(tensor, elementCount(tensor));
    return std::vector<double>(tensor.double_data().begin(), tensor.double_data().end());
  }
  return Error{fmt::format("constant '{}': expected FLOAT or DOUBLE values, got {}", tensor.name(),
                           dtypeCodeName(type))};
}

const onnx::AttributeProto* findAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attribute : node.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

/// The attribute `name` when present and of type `type`; none when absent.
Expected<const onnx::AttributeProto*> typedAttribute(const onnx::NodeProto& node,
                                                     const std::string& name, int type) {
  const onnx::AttributeProto* attribute = findAttribute(node, name);
  if (attribute == nullptr || attribute->type() == type) return attribute;
  return Error{fmt::format("attribute '{}': expected type {}, got {}", name,
                           onnx::AttributeProto_AttributeType_Name(type),
                           onnx::AttributeProto_AttributeType_Name(attribute->type()))};
}

}  // namespace

Expected<ir::DType> onnxDType(int32_t code) {
  for (const auto& mapping : kDTypes) {
    if (mapping.onnxCode == code) return mapping.dtype;
  }
  return Error{fmt::format(
      "ONNX dtype {} is not supported (supported: FLOAT, FLOAT16, BFLOAT16, INT64, INT32, INT8, "
      "BOOL)",
      dtypeCodeName(code))};
}

Expected<int64_t> normalizedOnnxAxis(const std::string& what, int64_t axis, int64_t rank) {
  const int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank) {
    return Error{fmt::format("{} is {}, expected a dim of a rank-{} input", what, axis, rank)};
  }
  return normalized;
}

OnnxContext::OnnxContext(ir::Graph& graph, int64_t opset,
                         std::unordered_set<std::string> reservedNames)
    : graph_(graph), opset_(opset), reservedNames_(std::move(reservedNames)) {}

OnnxContext::~OnnxContext() = default;

void OnnxContext::addConstant(const std::string& name, const onnx::TensorProto* tensor) {
  constants_[name] = tensor;
}

void OnnxContext::addOwnedConstant(const std::string& name,
                                   std::unique_ptr<onnx::TensorProto> tensor) {
  constants_[name] = tensor.get();
  ownedConstants_.push_back(std::move(tensor));
}

void OnnxContext::bindValue(const std::string& name, ir::TensorId tensor) {
  values_[name] = tensor;
}

void OnnxContext::markUnavailable(const std::string& name, std::string reason) {
  unavailable_[name] = std::move(reason);
}

bool OnnxContext::isBound(const std::string& name) const {
  return values_.contains(name) || constants_.contains(name);
}

bool OnnxContext::hasInput(const onnx::NodeProto& node, int index) {
  return index < node.input_size() && !node.input(index).empty();
}

Expected<ir::TensorId> OnnxContext::input(const onnx::NodeProto& node, int index) {
  if (!hasInput(node, index)) return Error{fmt::format("input {} is missing", index)};
  const std::string& name = node.input(index);
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  if (auto it = constants_.find(name); it != constants_.end()) {
    return materialise(name, *it->second);
  }
  if (auto it = unavailable_.find(name); it != unavailable_.end()) {
    return Error{fmt::format("input {} ('{}'): {}", index, name, it->second)};
  }
  return Error{fmt::format(
      "input {} ('{}'): unknown value (not a graph input, an initializer or the output of an "
      "earlier node; nodes must be in topological order)",
      index, name)};
}

Expected<ir::TensorId> OnnxContext::materialise(const std::string& name,
                                                const onnx::TensorProto& tensor) {
  auto dtype = onnxDType(tensor.data_type());
  if (!dtype) return dtype.error().in(fmt::format("constant '{}'", name));
  const ir::Shape shape(tensor.dims().begin(), tensor.dims().end());
  const auto role = ir::isFloating(*dtype) ? ir::TensorRole::kParameter : ir::TensorRole::kInput;
  auto id = graph_.addTensor(name, {shape, *dtype}, role);
  if (!id) return id.error();
  values_[name] = *id;
  return id;
}

const ir::TensorType& OnnxContext::typeOf(ir::TensorId tensor) const {
  return graph_.tensor(tensor).type;
}

Expected<const onnx::TensorProto*> OnnxContext::constantInput(const onnx::NodeProto& node,
                                                              int index) {
  if (!hasInput(node, index)) return Error{fmt::format("input {} is missing", index)};
  const std::string& name = node.input(index);
  auto it = constants_.find(name);
  if (it == constants_.end()) {
    return Error{fmt::format(
        "input {} ('{}') must be a constant (an initializer or a Constant node's output)", index,
        name)};
  }
  if (it->second->data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    return Error{
        fmt::format("input {} ('{}'): constants in external data are not read", index, name)};
  }
  return it->second;
}

Expected<std::vector<int64_t>> OnnxContext::constantInts(const onnx::NodeProto& node, int index) {
  auto tensor = constantInput(node, index);
  if (!tensor) return tensor.error();
  return intValues(**tensor);
}

Expected<double> OnnxContext::constantScalar(const onnx::NodeProto& node, int index) {
  auto tensor = constantInput(node, index);
  if (!tensor) return tensor.error();
  auto values = floatValues(**tensor);
  if (!values) return values.error();
  if (values->size() != 1) {
    return Error{fmt::format("input {} ('{}'): expected a scalar, got {} values", index,
                             node.input(index), values->size())};
  }
  return values->front();
}

Expected<std::optional<std::vector<int64_t>>> OnnxContext::intsFromInputOrAttribute(
    const onnx::NodeProto& node, int index, const std::string& attribute) {
  if (hasInput(node, index)) {
    auto values = constantInts(node, index);
    if (!values) return values.error();
    return std::optional<std::vector<int64_t>>(std::move(*values));
  }
  return intsAttribute(node, attribute);
}

Expected<std::optional<int64_t>> OnnxContext::intAttribute(const onnx::NodeProto& node,
                                                           const std::string& name) {
  auto attribute = typedAttribute(node, name, onnx::AttributeProto_AttributeType_INT);
  if (!attribute) return attribute.error();
  if (*attribute == nullptr) return std::optional<int64_t>();
  return std::optional<int64_t>((*attribute)->i());
}

Expected<std::optional<double>> OnnxContext::floatAttribute(const onnx::NodeProto& node,
                                                            const std::string& name) {
  auto attribute = typedAttribute(node, name, onnx::AttributeProto_AttributeType_FLOAT);
  if (!attribute) return attribute.error();
  if (*attribute == nullptr) return std::optional<double>();
  return std::optional<double>((*attribute)->f());
}

Expected<std::optional<std::vector<int64_t>>> OnnxContext::intsAttribute(
    const onnx::NodeProto& node, const std::string& name) {
  auto attribute = typedAttribute(node, name, onnx::AttributeProto_AttributeType_INTS);
  if (!attribute) return attribute.error();
  if (*attribute == nullptr) return std::optional<std::vector<int64_t>>();
  const auto& ints = (*attribute)->ints();
  return std::optional<std::vector<int64_t>>(std::vector<int64_t>(ints.begin(), ints.end()));
}

Expected<std::optional<std::string>> OnnxContext::stringAttribute(const onnx::NodeProto& node,
                                                                  const std::string& name) {
  auto attribute = typedAttribute(node, name, onnx::AttributeProto_AttributeType_STRING);
  if (!attribute) return attribute.error();
  if (*attribute == nullptr) return std::optional<std::string>();
  return std::optional<std::string>((*attribute)->s());
}

Status OnnxContext::addNodeOp(const onnx::NodeProto& node, ir::OpKind kind,
                              const ir::OpAttrs& attrs, const std::vector<ir::TensorId>& inputs) {
  return addNamedNodeOp(opName_, node, kind, attrs, inputs);
}

Status OnnxContext::addNamedNodeOp(const std::string& opName, const onnx::NodeProto& node,
                                   ir::OpKind kind, const ir::OpAttrs& attrs,
                                   const std::vector<ir::TensorId>& inputs) {
  if (node.output_size() == 0 || node.output(0).empty()) return Error{"output 0 is missing"};
  auto op = graph_.addOp(opName, kind, attrs, inputs, {node.output(0)});
  if (!op) return withoutOpName(op.error());
  values_[node.output(0)] = graph_.op(*op).outputs[0];
  return {};
}

Status OnnxContext::addOpWithOutputs(ir::OpKind kind, const ir::OpAttrs& attrs,
                                     const std::vector<ir::TensorId>& inputs,
                                     const std::vector<std::string>& outputNames) {
  auto op = graph_.addOp(opName_, kind, attrs, inputs, outputNames);
  if (!op) return withoutOpName(op.error());
  const std::vector<ir::TensorId>& outputs = graph_.op(*op).outputs;
  for (size_t index = 0; index < outputs.size(); ++index) {
    values_[outputNames[index]] = outputs[index];
  }
  return {};
}

Error OnnxContext::withoutOpName(const Error& error) const {
  // Graph errors start with "op '<name>': "; the caller already names the node.
  const std::string prefix = fmt::format("op '{}': ", opName_);
  if (error.message.starts_with(prefix)) return Error{error.message.substr(prefix.size())};
  return error;
}

Expected<ir::TensorId> OnnxContext::addIntermediateOp(const std::string& name, ir::OpKind kind,
                                                      const ir::OpAttrs& attrs,
                                                      const std::vector<ir::TensorId>& inputs) {
  auto op = graph_.addOp(name, kind, attrs, inputs, {freshTensorName(name)});
  if (!op) return op.error();
  return graph_.op(*op).outputs[0];
}

Status OnnxContext::alias(const onnx::NodeProto& node, ir::TensorId tensor) {
  if (node.output_size() == 0 || node.output(0).empty()) return Error{"output 0 is missing"};
  values_[node.output(0)] = tensor;
  return {};
}

std::string OnnxContext::freshTensorName(const std::string& base) const {
  std::string name = base;
  for (int suffix = 1; reservedNames_.contains(name) || graph_.findTensor(name); ++suffix) {
    name = fmt::format("{}_{}", base, suffix);
  }
  return name;
}

}  // namespace autopar::frontend
