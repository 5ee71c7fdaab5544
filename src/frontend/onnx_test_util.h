#pragma once
/// \file
/// Test-only: builds small ONNX models in memory for the importer's tests.
///   OnnxTestModel model;
///   model.input("x", {2, 3});
///   model.floatInitializer("w", {3, 4});
///   model.node("MatMul", "mm", {"x", "w"}, {"y"});
///   auto graph = model.import();   // parseOnnx of the serialised model, as "test.onnx"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/onnx_import.h"

namespace autopar::frontend {

class OnnxTestModel {
 public:
  explicit OnnxTestModel(int64_t opset = 17) {
    model_.set_ir_version(8);
    auto* entry = model_.add_opset_import();
    entry->set_domain("");
    entry->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  /// A graph input; a negative dim is dynamic with dim_param "batch".
  void input(const std::string& name, const std::vector<int64_t>& shape,
             int32_t dtype = onnx::TensorProto_DataType_FLOAT) {
    setType(model_.mutable_graph()->add_input(), name, shape, dtype);
  }

  /// A graph output's type, as input() writes it.
  void output(const std::string& name, const std::vector<int64_t>& shape,
              int32_t dtype = onnx::TensorProto_DataType_FLOAT) {
    setType(model_.mutable_graph()->add_output(), name, shape, dtype);
  }

  /// A value_info entry: the type of an intermediate value, as input() writes it.
  onnx::ValueInfoProto& valueInfo(const std::string& name, const std::vector<int64_t>& shape,
                                  int32_t dtype = onnx::TensorProto_DataType_FLOAT) {
    auto* value = model_.mutable_graph()->add_value_info();
    setType(value, name, shape, dtype);
    return *value;
  }

  /// A FLOAT initializer of zeros (values do not matter to the importer).
  void floatInitializer(const std::string& name, const std::vector<int64_t>& shape) {
    auto* tensor = initializer(name, shape, onnx::TensorProto_DataType_FLOAT);
    int64_t count = 1;
    for (int64_t dim : shape) count *= dim;
    for (int64_t i = 0; i < count; ++i) tensor->add_float_data(0.0f);
  }

  /// A 1-D INT64 initializer (shapes, axes, starts), or a scalar when `scalar`.
  void intInitializer(const std::string& name, const std::vector<int64_t>& values,
                      bool scalar = false) {
    std::vector<int64_t> shape;
    if (!scalar) shape.push_back(static_cast<int64_t>(values.size()));
    auto* tensor = initializer(name, shape, onnx::TensorProto_DataType_INT64);
    for (int64_t value : values) tensor->add_int64_data(value);
  }

  /// A FLOAT scalar initializer (Dropout's ratio).
  void scalarInitializer(const std::string& name, float value) {
    initializer(name, {}, onnx::TensorProto_DataType_FLOAT)->add_float_data(value);
  }

  onnx::NodeProto& node(const std::string& opType, const std::string& name,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    auto* node = model_.mutable_graph()->add_node();
    node->set_op_type(opType);
    node->set_name(name);
    for (const auto& input : inputs) node->add_input(input);
    for (const auto& output : outputs) node->add_output(output);
    return *node;
  }

  static void intAttribute(onnx::NodeProto& node, const std::string& name, int64_t value) {
    auto* attribute = addAttribute(node, name, onnx::AttributeProto_AttributeType_INT);
    attribute->set_i(value);
  }
  static void intsAttribute(onnx::NodeProto& node, const std::string& name,
                            const std::vector<int64_t>& values) {
    auto* attribute = addAttribute(node, name, onnx::AttributeProto_AttributeType_INTS);
    for (int64_t value : values) attribute->add_ints(value);
  }
  static void floatAttribute(onnx::NodeProto& node, const std::string& name, float value) {
    addAttribute(node, name, onnx::AttributeProto_AttributeType_FLOAT)->set_f(value);
  }
  static void stringAttribute(onnx::NodeProto& node, const std::string& name,
                              const std::string& value) {
    addAttribute(node, name, onnx::AttributeProto_AttributeType_STRING)->set_s(value);
  }

  [[nodiscard]] std::string bytes() const { return model_.SerializeAsString(); }

  Expected<ir::Graph> import(const OnnxImportOptions& options = {}) const {
    return parseOnnx(bytes(), "test.onnx", options);
  }

  /// The import's error message, or "<ok>".
  [[nodiscard]] std::string errorOf(const OnnxImportOptions& options = {}) const {
    auto graph = import(options);
    return graph ? "<ok>" : graph.error().message;
  }

  onnx::ModelProto& proto() { return model_; }

 private:
  onnx::TensorProto* initializer(const std::string& name, const std::vector<int64_t>& shape,
                                 int32_t dtype) {
    auto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(dtype);
    for (int64_t dim : shape) tensor->add_dims(dim);
    return tensor;
  }

  static void setType(onnx::ValueInfoProto* value, const std::string& name,
                      const std::vector<int64_t>& shape, int32_t dtype) {
    value->set_name(name);
    auto* type = value->mutable_type()->mutable_tensor_type();
    type->set_elem_type(dtype);
    for (int64_t dim : shape) {
      auto* size = type->mutable_shape()->add_dim();
      if (dim < 0) {
        size->set_dim_param("batch");
      } else {
        size->set_dim_value(dim);
      }
    }
  }

  static onnx::AttributeProto* addAttribute(onnx::NodeProto& node, const std::string& name,
                                            onnx::AttributeProto_AttributeType type) {
    auto* attribute = node.add_attribute();
    attribute->set_name(name);
    attribute->set_type(type);
    return attribute;
  }

  onnx::ModelProto model_;
};

}  // namespace autopar::frontend
