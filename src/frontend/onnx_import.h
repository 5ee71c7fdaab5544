#pragma once
/// \file
/// ONNX import (`--model file.onnx`): reads an ONNX model with libonnx's protobuf classes and maps
/// its standard ops onto the IR, one node at a time, in the file's (topological) order.
/// docs/onnx-import.md lists the supported ops and how each maps.
///
/// Example: a Gemm layer exported from PyTorch (weight [out, in], transB = 1)
///   node 'layer1' Gemm(x [32,784], layer1.weight [512,784], layer1.bias [512]) -> h1
/// becomes two ops
///   layer1           MatMul (transposeB) x, layer1.weight -> layer1 [32,512]
///   layer1.bias_add  Add     layer1, layer1.bias        -> h1     [32,512]
///
/// Values:
///   - graph inputs (those without an initializer) become IR inputs; their dims must be static,
///     or OnnxImportOptions::dynamicDimValue gives every dynamic dim a value;
///   - initializers and Constant nodes read as attributes (Reshape's shape, Slice's starts, axes,
///     Dropout's ratio) stay constants; those used as op inputs become tensors: floating types
///     as parameters, integer and bool types as inputs (e.g. constant Gather indices);
///   - Identity aliases its input, so it adds no op.
/// An op autopar does not translate becomes an Opaque op, replicated on every device, when the
/// shape and element type of each of its outputs are known, from the model's value_info and
/// graph outputs or else from ONNX shape inference (onnx_opaque.h). The import then warns once
/// per op type:
///   "model.onnx: ONNX op 'Foo' (node 'n3' and 2 more) is not known; replicated on every device"
/// Errors are one line naming the file and, for node errors, the node:
///   "model.onnx: node 'n7' (op_type Foo): unsupported ONNX op, and output 0 ('y') has no known
///   shape; to replicate the op, give each of its outputs a static shape in the graph's
///   value_info; supported: Add, Cast, ..."
///   "model.onnx: graph input 'x': dim 0 ('batch') is dynamic; set a value for dynamic dims"
///   "model.onnx: initializer 'w': ONNX dtype DOUBLE is not supported (supported: FLOAT, ...)"
/// No node is ever skipped silently.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "util/expected.h"

namespace autopar::frontend {

struct OnnxImportOptions {
  /// The size given to every dynamic dim (a dim_param such as "batch", or a dim with no value)
  /// of a graph input; 0 rejects dynamic dims with an error naming the input. The CLI's batch
  /// option sets it for models exported with a dynamic batch axis.
  int64_t dynamicDimValue = 0;
  /// Receives each warning as one line without a prefix, e.g. "model.onnx: ONNX op 'TopK' (node
  /// 'topk') is not known; replicated on every device". Warnings come only with a graph, after
  /// the whole import succeeded. Unset, they are printed on stderr as "autopar: warning: <line>",
  /// each distinct line once per process.
  std::function<void(const std::string&)> onWarning;
};

/// Reads and imports an ONNX file; errors are prefixed with `path` as given. The graph is named
/// after the ONNX graph (or the file stem when the graph has no name).
Expected<ir::Graph> readOnnx(const std::string& path, const OnnxImportOptions& options = {});

/// Imports a serialised ModelProto; `sourceName` prefixes every error and names the graph when
/// the ONNX graph has no name.
Expected<ir::Graph> parseOnnx(const std::string& bytes, const std::string& sourceName,
                              const OnnxImportOptions& options = {});

/// The supported ONNX op types, sorted: Add, Cast, Concat, Constant, Div, Dropout, ...
const std::vector<std::string>& supportedOnnxOps();

}  // namespace autopar::frontend
