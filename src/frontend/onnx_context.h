#pragma once
/// \file
/// The state of one ONNX import and the helpers the per-op mappers (onnx_ops_*.cc) share: the
/// value table (ONNX value name -> IR tensor), constants, attribute access and op creation.
/// Internal to the frontend; the protobuf classes are only forward-declared here so that
/// <onnx/onnx_pb.h> stays in the .cc files.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "util/expected.h"

namespace onnx {
class NodeProto;
class TensorProto;
}  // namespace onnx

namespace autopar::frontend {

/// The IR dtype of an ONNX TensorProto::DataType code; others fail by name:
/// "ONNX dtype DOUBLE is not supported (supported: FLOAT, FLOAT16, BFLOAT16, INT64, INT32, INT8,
/// BOOL)".
Expected<ir::DType> onnxDType(int32_t code);

/// `axis` counted from the end when negative, checked against `rank`:
/// normalizedOnnxAxis("attribute 'axis'", -1, 3) is 2; with 3 it fails with
/// "attribute 'axis' is 3, expected a dim of a rank-3 input".
Expected<int64_t> normalizedOnnxAxis(const std::string& what, int64_t axis, int64_t rank);

class OnnxContext {
 public:
  /// `reservedNames` holds every value name of the model, so that names made up for
  /// intermediate tensors never collide with a later ONNX value.
  OnnxContext(ir::Graph& graph, int64_t opset, std::unordered_set<std::string> reservedNames);
  ~OnnxContext();
  OnnxContext(const OnnxContext&) = delete;
  OnnxContext& operator=(const OnnxContext&) = delete;

  [[nodiscard]] ir::Graph& graph() { return graph_; }
  /// The model's opset for the default ONNX domain.
  [[nodiscard]] int64_t opset() const { return opset_; }

  /// Registers a constant (an initializer, kept by pointer: the ModelProto outlives the import).
  void addConstant(const std::string& name, const onnx::TensorProto* tensor);
  /// Registers a constant the context owns (a Constant node's value).
  void addOwnedConstant(const std::string& name, std::unique_ptr<onnx::TensorProto> tensor);
  /// Binds an ONNX value name to an IR tensor.
  void bindValue(const std::string& name, ir::TensorId tensor);
  /// Marks a value no op produces (Dropout's mask), so a consumer gets `reason` as its error.
  void markUnavailable(const std::string& name, std::string reason);
  [[nodiscard]] bool isBound(const std::string& name) const;

  /// Starts a node: `opName` is the IR name of its (first) op, the node's name or
  /// "<op_type>_<index>" when it has none.
  void beginNode(const std::string& opName) { opName_ = opName; }
  [[nodiscard]] const std::string& opName() const { return opName_; }

  /// Whether input `index` of `node` is given (present and non-empty).
  static bool hasInput(const onnx::NodeProto& node, int index);
  /// The tensor of input `index`; a constant becomes a tensor on first use (floating types a
  /// parameter, others an input). Fails with "input 1 ('w'): unknown value ...".
  Expected<ir::TensorId> input(const onnx::NodeProto& node, int index);
  /// The type of an IR tensor.
  [[nodiscard]] const ir::TensorType& typeOf(ir::TensorId tensor) const;

  /// The integer values (INT64 or INT32) of constant input `index`.
  Expected<std::vector<int64_t>> constantInts(const onnx::NodeProto& node, int index);
  /// A floating scalar (FLOAT or DOUBLE) of constant input `index`.
  Expected<double> constantScalar(const onnx::NodeProto& node, int index);
  /// Integers from input `index` when given, else from attribute `attribute`; none when
  /// neither is (Slice's axes, Reduce*'s axes, Squeeze's axes across opsets).
  Expected<std::optional<std::vector<int64_t>>> intsFromInputOrAttribute(
      const onnx::NodeProto& node, int index, const std::string& attribute);

  /// Attributes of `node` by name, when present; a present attribute of another type fails.
  static Expected<std::optional<int64_t>> intAttribute(const onnx::NodeProto& node,
                                                       const std::string& name);
  static Expected<std::optional<double>> floatAttribute(const onnx::NodeProto& node,
                                                        const std::string& name);
  static Expected<std::optional<std::vector<int64_t>>> intsAttribute(const onnx::NodeProto& node,
                                                                     const std::string& name);
  static Expected<std::optional<std::string>> stringAttribute(const onnx::NodeProto& node,
                                                              const std::string& name);

  /// Adds the op named opName() that produces output 0 of `node`.
  Status addNodeOp(const onnx::NodeProto& node, ir::OpKind kind, const ir::OpAttrs& attrs,
                   const std::vector<ir::TensorId>& inputs);
  /// addNodeOp with another op name ("<node>.bias_add" after Gemm's MatMul).
  Status addNamedNodeOp(const std::string& opName, const onnx::NodeProto& node, ir::OpKind kind,
                        const ir::OpAttrs& attrs, const std::vector<ir::TensorId>& inputs);
  /// Adds the op named opName() with one output per name (an Opaque op's outputs, the node's
  /// non-empty outputs) and binds each name to its tensor.
  Status addOpWithOutputs(ir::OpKind kind, const ir::OpAttrs& attrs,
                          const std::vector<ir::TensorId>& inputs,
                          const std::vector<std::string>& outputNames);
  /// Adds a helper op `name` (Gemm's MatMul before its bias Add) whose output tensor gets a name
  /// no ONNX value uses; returns that tensor.
  Expected<ir::TensorId> addIntermediateOp(const std::string& name, ir::OpKind kind,
                                           const ir::OpAttrs& attrs,
                                           const std::vector<ir::TensorId>& inputs);
  /// Output 0 of `node` is `tensor` (Identity, and no-op Squeeze/Reduce).
  Status alias(const onnx::NodeProto& node, ir::TensorId tensor);

 private:
  Expected<const onnx::TensorProto*> constantInput(const onnx::NodeProto& node, int index);
  Expected<ir::TensorId> materialise(const std::string& name, const onnx::TensorProto& tensor);
  std::string freshTensorName(const std::string& base) const;
  /// A graph error without the "op '<name>': " that starts it.
  [[nodiscard]] Error withoutOpName(const Error& error) const;

  ir::Graph& graph_;
  int64_t opset_;
  std::unordered_set<std::string> reservedNames_;
  std::unordered_map<std::string, ir::TensorId> values_;
  std::unordered_map<std::string, const onnx::TensorProto*> constants_;
  std::vector<std::unique_ptr<onnx::TensorProto>> ownedConstants_;
  std::unordered_map<std::string, std::string> unavailable_;
  std::string opName_;
};

/// Maps one node onto the IR through `context`; errors name no node (the caller adds it).
using OnnxOpMapper = Status (*)(OnnxContext& context, const onnx::NodeProto& node);

/// The mappers of onnx_ops_math.cc and onnx_ops_shape.cc by op_type.
const std::unordered_map<std::string, OnnxOpMapper>& onnxOpMappers();

/// Registration halves, one per file.
void addMathOpMappers(std::unordered_map<std::string, OnnxOpMapper>& mappers);
void addShapeOpMappers(std::unordered_map<std::string, OnnxOpMapper>& mappers);

}  // namespace autopar::frontend
