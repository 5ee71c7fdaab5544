#pragma once
/// \file
/// ONNX nodes autopar does not translate (no mapper in onnx_ops_*.cc). Where the type of every
/// output is known, the node becomes an Opaque op that every plan replicates on every device, as
/// OpenXLA Shardy replicates an op it has no rule for; otherwise it is an error naming the node.
/// Internal to the frontend.
///
/// Example: a TopK node, whose outputs ONNX shape inference can type,
///   node 'topk' TopK(logits [8,1000], k = [5]) -> values, indices
/// becomes
///   topk  Opaque {op_type TopK} logits, k -> values [8,5] fp32, indices [8,5] int64
/// and the import warns once for all TopK nodes:
///   "ONNX op 'TopK' (node 'topk') is not known; replicated on every device"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontend/onnx_context.h"
#include "ir/tensor.h"
#include "util/expected.h"

namespace onnx {
class ModelProto;
class TypeProto;
}  // namespace onnx

namespace autopar::frontend {

/// The types of an ONNX graph's values, as far as the model states them (value_info and graph
/// outputs) or ONNX shape inference can tell.
class OnnxValueTypes {
 public:
  /// `model` must outlive this. `dynamicDimValue` is OnnxImportOptions::dynamicDimValue: a dim
  /// named like a dynamic dim of a graph input (dim_param "batch") gets that size too.
  OnnxValueTypes(const onnx::ModelProto& model, int64_t dynamicDimValue);
  ~OnnxValueTypes();
  OnnxValueTypes(const OnnxValueTypes&) = delete;
  OnnxValueTypes& operator=(const OnnxValueTypes&) = delete;

  /// The static type of value `name`: from the graph's value_info or outputs when they give one,
  /// else from ONNX shape inference, run once on first need. Fails with what is missing, worded
  /// to follow the value's name: "has no known shape", "has a dynamic dim 1 ('seq')", "has
  /// element type DOUBLE, which autopar does not model".
  Expected<ir::TensorType> staticType(const std::string& name);

 private:
  void inferShapes();

  const onnx::ModelProto& model_;
  int64_t dynamicDimValue_;
  /// Sizes of the graph inputs' named dynamic dims.
  std::unordered_map<std::string, int64_t> dimSizes_;
  std::unordered_map<std::string, const onnx::TypeProto*> declared_;
  /// A copy of the model that ONNX shape inference annotated; null until needed.
  std::unique_ptr<onnx::ModelProto> inferredModel_;
  std::unordered_map<std::string, const onnx::TypeProto*> inferred_;
};

/// The nodes imported as Opaque ops, by op type, for one warning per type.
class OpaqueNodeLog {
 public:
  void add(const std::string& opType, const std::string& nodeLabel);

  /// One line per op type, in the order the types were first seen:
  ///   "ONNX op 'Foo' (node 'n3' and 2 more) is not known; replicated on every device"
  [[nodiscard]] std::vector<std::string> warnings() const;

 private:
  struct Entry {
    std::string opType;
    std::string firstNode;
    int count = 0;
  };
  std::vector<Entry> entries_;
};

/// Imports `node`, which has no mapper, as an Opaque op named context.opName() whose op_type is
/// `opType` (the node's op_type, prefixed with its domain when it has one). Its inputs are the
/// node's non-empty inputs, its outputs the non-empty outputs, each typed by `types`. Fails,
/// naming the first output whose type is unknown, with what to give:
///   "unsupported ONNX op, and output 0 ('y') has no known shape; to replicate the op, give each
///   of its outputs a static shape in the graph's value_info; supported: Add, Cast, ..."
Status addOpaqueNode(OnnxContext& context, const onnx::NodeProto& node, const std::string& opType,
                     OnnxValueTypes& types);

}  // namespace autopar::frontend
