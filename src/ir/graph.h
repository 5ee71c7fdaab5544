#pragma once
/// \file
/// The operator graph. Ops are stored in a topological order by construction: an op can only
/// consume tensors that already exist when it is added.
///
/// Example (a one-layer MLP):
///   Graph g("mlp");
///   auto x = g.addTensor("x", {{32, 784}, DType::kF32}, TensorRole::kInput);
///   auto w = g.addTensor("w", {{784, 512}, DType::kF32}, TensorRole::kParameter);
///   auto y = g.addOp("dense1", OpKind::kMatMul, {}, {*x, *w}, {"h1"});  // h1: [32,512]

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/op.h"
#include "ir/op_semantics.h"
#include "ir/tensor.h"
#include "util/expected.h"

namespace autopar::ir {

/// What a user sets on a block (a Cell in MindSpore), applying to every op in it and in the
/// blocks nested in it: seed 001's pipeline_stage(value) and Cell.recompute(), seed 004's
/// set_comm_fusion(id), and the model chunk of its stage under the interleaved schedule
/// (MindSpore's pipeline segment, PipelineCell's segment_config).
struct BlockSettings {
  std::optional<int> pipelineStage;
  std::optional<int> pipelineSegment;
  std::optional<int> commFusion;
  bool recompute = false;
  bool operator==(const BlockSettings&) const = default;
};

/// Settings for the blocks in a scope, typed: what `--stage llm.layer.3=1` or a layer placement
/// ("layer 3 on stage 1, recomputed") says. Graph::setBlockSettings merges them in order.
struct BlockAssignment {
  std::string scope;
  BlockSettings settings;
  bool operator==(const BlockAssignment&) const = default;
};

/// How many of `assignments` recompute their block.
inline size_t recomputedBlocks(const std::vector<BlockAssignment>& assignments) {
  size_t count = 0;
  for (const BlockAssignment& assignment : assignments) count += assignment.settings.recompute;
  return count;
}

/// True when `block` is `scope` or nested in it: "llm.layer.3" is in "llm.layer.3" and in "llm",
/// not in "llm.layer.30" nor "llm.lay".
bool blockInScope(std::string_view block, std::string_view scope);

/// True when `block` is one layer of a stack: tagged "<prefix>.<index>" ("llm.layer.12",
/// "vit.layer.3"). Full recompute and pipeline placement work on these.
bool isStackLayer(std::string_view block);

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  [[nodiscard]] const std::string& name() const { return name_; }

  /// Adds an input or parameter tensor. Fails on a duplicate name or a non-positive dim.
  Expected<TensorId> addTensor(const std::string& name, TensorType type, TensorRole role);

  /// Adds an op; its outputs are created with inferred types and the given names (one name per
  /// output: every kind has exactly one output but Opaque, which has one per attrs.outputTypes).
  /// Fails on unknown inputs, duplicate names and shape errors; the message starts with the op's
  /// name.
  Expected<OpId> addOp(const std::string& name, OpKind kind, const OpAttrs& attrs,
                       const std::vector<TensorId>& inputs,
                       const std::vector<std::string>& outputNames, const std::string& block = "");

  [[nodiscard]] const std::vector<Op>& ops() const { return ops_; }
  [[nodiscard]] const std::vector<Tensor>& tensors() const { return tensors_; }
  [[nodiscard]] const Op& op(OpId id) const { return ops_.at(id); }
  [[nodiscard]] Op& mutableOp(OpId id) { return ops_.at(id); }
  [[nodiscard]] const Tensor& tensor(TensorId id) const { return tensors_.at(id); }
  /// For flags that do not change the graph's structure (parallelOptimizer).
  [[nodiscard]] Tensor& mutableTensor(TensorId id) { return tensors_.at(id); }

  [[nodiscard]] std::optional<TensorId> findTensor(std::string_view name) const;
  [[nodiscard]] std::optional<OpId> findOp(std::string_view name) const;

  /// Input types of an op, in order.
  [[nodiscard]] std::vector<TensorType> inputTypes(const Op& op) const;
  [[nodiscard]] std::vector<TensorType> outputTypes(const Op& op) const;

  /// Parameters in creation order.
  [[nodiscard]] std::vector<TensorId> parameters() const;
  /// Total number of parameter elements.
  [[nodiscard]] int64_t parameterCount() const;

  /// Convenience wrappers over op_semantics for a node of this graph.
  [[nodiscard]] double forwardFlops(const Op& op) const;
  [[nodiscard]] int64_t forwardBytes(const Op& op) const;
  [[nodiscard]] BackwardRule backwardRule(const Op& op) const;

  /// Sets what a user gave block `scope`; the fields that are set replace earlier ones. Fails
  /// when no op's block is in `scope`.
  Status setBlockSettings(const std::string& scope, const BlockSettings& settings);
  /// Settings per scope, as given.
  [[nodiscard]] const std::map<std::string, BlockSettings, std::less<>>& blockSettings() const {
    return blockSettings_;
  }
  /// The settings that apply to `op`: per field, the innermost scope that sets it.
  [[nodiscard]] BlockSettings settingsOf(const Op& op) const;

 private:
  std::string name_;
  std::vector<Tensor> tensors_;
  std::vector<Op> ops_;
  std::unordered_map<std::string, TensorId> tensorByName_;
  std::unordered_map<std::string, OpId> opByName_;
  std::map<std::string, BlockSettings, std::less<>> blockSettings_;
  /// Every op's block and the block's prefixes ending before a '.': the scopes setBlockSettings
  /// accepts, without scanning the ops for each (a placement sets one scope per layer).
  std::set<std::string, std::less<>> scopes_;
};

}  // namespace autopar::ir
