#include "ir/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace autopar::ir {

namespace {

/// At most 2^50 elements a tensor (a PiB of bytes): sizes, byte counts and FLOPs computed from
/// shapes then stay far inside int64.
constexpr int64_t kMaxTensorElements = int64_t{1} << 50;

/// Every dim positive and the element count at most kMaxTensorElements.
Status checkShape(const std::string& name, const Shape& shape) {
  int64_t count = 1;
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    if (shape[dim] <= 0) {
      return Error{fmt::format("tensor '{}': shape[{}] is {}, expected a positive size", name, dim,
                               shape[dim])};
    }
    if (count > kMaxTensorElements / shape[dim]) {
      return Error{fmt::format("tensor '{}': shape {} has more than 2^50 elements", name,
                               shapeToString(shape))};
    }
    count *= shape[dim];
  }
  return {};
}

}  // namespace

Expected<TensorId> Graph::addTensor(const std::string& name, TensorType type, TensorRole role) {
  if (name.empty()) return Error{"tensor name: expected a non-empty string"};
  if (tensorByName_.contains(name)) return Error{fmt::format("tensor '{}': duplicate name", name)};
  if (auto status = checkShape(name, type.shape); !status) return status.error();
  const auto id = static_cast<TensorId>(tensors_.size());
  tensors_.push_back(Tensor{id, name, std::move(type), role, kNoOp, {}, {}});
  tensorByName_.emplace(name, id);
  return id;
}

Expected<OpId> Graph::addOp(const std::string& name, OpKind kind, const OpAttrs& attrs,
                            const std::vector<TensorId>& inputs,
                            const std::vector<std::string>& outputNames, const std::string& block) {
  if (name.empty()) return Error{"op name: expected a non-empty string"};
  if (opByName_.contains(name)) return Error{fmt::format("op '{}': duplicate name", name)};
  std::vector<TensorType> inputTypes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] < 0 || static_cast<size_t>(inputs[i]) >= tensors_.size()) {
      return Error{fmt::format("op '{}': inputs[{}]: unknown tensor id {}", name, i, inputs[i])};
    }
    inputTypes.push_back(tensors_[inputs[i]].type);
  }
  auto outputTypes = inferOutputTypes(kind, attrs, inputTypes);
  if (!outputTypes) return outputTypes.error().in(fmt::format("op '{}'", name));
  if (outputTypes->size() != outputNames.size()) {
    return Error{fmt::format("op '{}': {} produces {} output(s), {} name(s) given", name,
                             opKindName(kind), outputTypes->size(), outputNames.size())};
  }
  for (size_t i = 0; i < outputNames.size(); ++i) {
    if (outputNames[i].empty() || tensorByName_.contains(outputNames[i])) {
      return Error{fmt::format("op '{}': output '{}': expected a new, non-empty tensor name", name,
                               outputNames[i])};
    }
    if (auto status = checkShape(outputNames[i], (*outputTypes)[i].shape); !status) {
      return status.error().in(fmt::format("op '{}'", name));
    }
  }

  const auto opId = static_cast<OpId>(ops_.size());
  // A layer's ops come one after another: its scopes are recorded once, at its first op.
  if (ops_.empty() || ops_.back().block != block) {
    for (size_t end = block.size(); end > 0 && end != std::string::npos;
         end = block.rfind('.', end - 1)) {
      if (!scopes_.emplace(block.substr(0, end)).second) break;  // its prefixes are in too
    }
  }
  Op op{opId, name, kind, attrs, inputs, {}, block, {}};
  for (TensorId input : inputs) tensors_[input].consumers.push_back(opId);
  for (size_t i = 0; i < outputNames.size(); ++i) {
    const auto id = static_cast<TensorId>(tensors_.size());
    tensors_.push_back(
        Tensor{id, outputNames[i], (*outputTypes)[i], TensorRole::kActivation, opId, {}, {}});
    tensorByName_.emplace(outputNames[i], id);
    op.outputs.push_back(id);
  }
  ops_.push_back(std::move(op));
  opByName_.emplace(name, opId);
  return opId;
}

std::optional<TensorId> Graph::findTensor(std::string_view name) const {
  auto it = tensorByName_.find(std::string(name));
  if (it == tensorByName_.end()) return std::nullopt;
  return it->second;
}

std::optional<OpId> Graph::findOp(std::string_view name) const {
  auto it = opByName_.find(std::string(name));
  if (it == opByName_.end()) return std::nullopt;
  return it->second;
}

std::vector<TensorType> Graph::inputTypes(const Op& op) const {
  std::vector<TensorType> types;
  types.reserve(op.inputs.size());
  for (TensorId id : op.inputs) types.push_back(tensors_[id].type);
  return types;
}

std::vector<TensorType> Graph::outputTypes(const Op& op) const {
  std::vector<TensorType> types;
  types.reserve(op.outputs.size());
  for (TensorId id : op.outputs) types.push_back(tensors_[id].type);
  return types;
}

std::vector<TensorId> Graph::parameters() const {
  std::vector<TensorId> ids;
  for (const auto& tensor : tensors_) {
    if (tensor.isParameter()) ids.push_back(tensor.id);
  }
  return ids;
}

int64_t Graph::parameterCount() const {
  int64_t count = 0;
  for (const auto& tensor : tensors_) {
    if (tensor.isParameter()) count += numElements(tensor.type.shape);
  }
  return count;
}

double Graph::forwardFlops(const Op& op) const {
  return ir::forwardFlops(op.kind, op.attrs, inputTypes(op), outputTypes(op));
}

int64_t Graph::forwardBytes(const Op& op) const {
  return ir::forwardBytes(op.kind, op.attrs, inputTypes(op), outputTypes(op));
}

BackwardRule Graph::backwardRule(const Op& op) const {
  return ir::backwardRule(op.kind, op.attrs, inputTypes(op), outputTypes(op));
}

bool isStackLayer(std::string_view block) {
  const auto dot = block.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == block.size()) return false;
  return std::all_of(block.begin() + static_cast<std::ptrdiff_t>(dot) + 1, block.end(),
                     [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool blockInScope(std::string_view block, std::string_view scope) {
  if (!block.starts_with(scope)) return false;
  return block.size() == scope.size() || block[scope.size()] == '.';
}

Status Graph::setBlockSettings(const std::string& scope, const BlockSettings& settings) {
  if (!scopes_.contains(scope)) {
    return Error{fmt::format("block '{}': no op of graph '{}' is in this block", scope, name_)};
  }
  BlockSettings& current = blockSettings_[scope];
  if (settings.pipelineStage) current.pipelineStage = settings.pipelineStage;
  if (settings.pipelineSegment) current.pipelineSegment = settings.pipelineSegment;
  if (settings.commFusion) current.commFusion = settings.commFusion;
  current.recompute = current.recompute || settings.recompute;
  return {};
}

BlockSettings Graph::settingsOf(const Op& op) const {
  BlockSettings result;
  if (blockSettings_.empty()) return result;
  // The scopes holding op.block are the block and its prefixes ending before a '.'; looked up from
  // the innermost out, so the innermost setting of each field wins. (A placement names a scope
  // per layer: scanning them all for every op made the full model quadratic in layers.)
  const std::string_view block = op.block;
  bool stage = false;
  bool segment = false;
  bool fusion = false;
  for (size_t end = block.size();;) {
    if (const auto it = blockSettings_.find(block.substr(0, end)); it != blockSettings_.end()) {
      const BlockSettings& settings = it->second;
      if (settings.pipelineStage && !stage) {
        result.pipelineStage = settings.pipelineStage;
        stage = true;
      }
      if (settings.pipelineSegment && !segment) {
        result.pipelineSegment = settings.pipelineSegment;
        segment = true;
      }
      if (settings.commFusion && !fusion) {
        result.commFusion = settings.commFusion;
        fusion = true;
      }
      result.recompute = result.recompute || settings.recompute;
    }
    const size_t dot = end == 0 ? std::string_view::npos : block.rfind('.', end - 1);
    if (dot == std::string_view::npos) break;
    end = dot;
  }
  return result;
}

}  // namespace autopar::ir
