#pragma once
/// \file
/// Graph JSON ("autopar.graph", version 1): the file format for an arbitrary operator graph with
/// optional shard annotations. docs/graph-format.md describes every field.
///
/// Example (seed 002's first layer, annotated as `dense1.matmul.shard(((2, 4), (4, 1)))`):
///   {"format": "autopar.graph", "version": 1, "name": "ffn",
///    "tensors": [{"name": "x", "shape": [32, 784], "dtype": "fp32", "role": "input"},
///                {"name": "dense1.weight", "shape": [784, 512], "role": "parameter"}],
///    "ops": [{"name": "dense1.matmul", "kind": "MatMul", "inputs": ["x", "dense1.weight"],
///             "outputs": ["dense1.matmul"], "shard": [[2, 4], [4, 1]]}]}
///
/// Errors are one line naming the source and the JSON path of the field, e.g.
///   "ffn.json: ops[3].inputs[1]: unknown tensor 'w9'"
///   "ffn.json: ops[0]: MatMul: inputs[1] dim 0 is 64 but inputs[0] contracts over 32"
///   "ffn.json: line 4: JSON parse error: syntax error while parsing object - ..."

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "ir/graph.h"
#include "util/expected.h"

namespace autopar::frontend {

/// The "format" value every graph file carries, and the version this code reads and writes.
inline constexpr const char* kGraphFormat = "autopar.graph";
inline constexpr int kGraphFormatVersion = 1;

/// Reads and parses a graph file; errors are prefixed with `path` as given.
Expected<ir::Graph> readGraphJson(const std::string& path);

/// Parses graph JSON text; `sourceName` prefixes every error message ("ffn.json: ...").
Expected<ir::Graph> parseGraphJson(const std::string& text, const std::string& sourceName);

/// Parses an already-decoded document (used by readers that embed a graph in a larger file).
Expected<ir::Graph> graphFromJson(const nlohmann::json& document, const std::string& sourceName);

/// The graph as a document: inputs and parameters in creation order, then ops in graph order
/// with their output shapes. parseGraphJson(dumpGraphJson(graphToJson(g))) rebuilds `g`: the same
/// tensors, ops, attributes, blocks and shard annotations, by name.
nlohmann::json graphToJson(const ir::Graph& graph);

/// Serialises a graph document for people to read: one tensor or op per line, keys in the order
/// the format documents (name, kind, inputs, outputs, ...), a trailing newline.
std::string dumpGraphJson(const nlohmann::json& document);

/// Writes dumpGraphJson(graphToJson(graph)) to `path`.
Status writeGraphJson(const ir::Graph& graph, const std::string& path);

}  // namespace autopar::frontend
