#include "search/op_level/layer_fold.h"

#include <fmt/format.h>

#include <map>
#include <tuple>

namespace autopar::search {

namespace {

/// One layer of a stack: its block tag and its ops in graph order.
struct Layer {
  std::string block;
  std::vector<ir::OpId> ops;
};

/// Where each op sits: its layer (an index into Stacks::layers, -1 outside every stack) and its
/// position among the layer's ops.
struct Stacks {
  std::vector<Layer> layers;
  std::map<std::string, std::vector<size_t>> byPrefix;  ///< a stack's layers, in graph order
  std::vector<int> layerOf;
  std::vector<size_t> positionOf;
};

Stacks findStacks(const ir::Graph& graph) {
  Stacks stacks;
  stacks.layerOf.assign(graph.ops().size(), -1);
  stacks.positionOf.assign(graph.ops().size(), 0);
  std::map<std::string, size_t, std::less<>> layerByBlock;
  for (const ir::Op& op : graph.ops()) {
    if (!ir::isStackLayer(op.block)) continue;
    auto [found, added] = layerByBlock.emplace(op.block, stacks.layers.size());
    if (added) {
      stacks.layers.push_back({op.block, {}});
      stacks.byPrefix[op.block.substr(0, op.block.rfind('.'))].push_back(found->second);
    }
    Layer& layer = stacks.layers[found->second];
    stacks.layerOf[op.id] = static_cast<int>(found->second);
    stacks.positionOf[op.id] = layer.ops.size();
    layer.ops.push_back(op.id);
  }
  return stacks;
}

/// How an op's input reaches it, relative to its layer: from an op of the same layer or of the
/// layer before (by position and output), or as a tensor from elsewhere (a parameter by its
/// type alone, any other tensor by its id).
enum class Source { kSameLayer, kLayerBefore, kParameter, kOther };
using InputKey = std::tuple<Source, size_t, size_t>;

InputKey inputKey(const ir::Graph& graph, const Stacks& stacks, ir::TensorId id, int layer,
                  int layerBefore) {
  const ir::Tensor& tensor = graph.tensor(id);
  if (tensor.producer != ir::kNoOp) {
    const int from = stacks.layerOf[tensor.producer];
    const ir::Op& producer = graph.op(tensor.producer);
    size_t output = 0;
    while (producer.outputs[output] != id) ++output;
    const size_t position = stacks.positionOf[tensor.producer];
    if (from == layer) return {Source::kSameLayer, position, output};
    if (from == layerBefore) return {Source::kLayerBefore, position, output};
  }
  if (tensor.isParameter()) return {Source::kParameter, 0, 0};
  return {Source::kOther, static_cast<size_t>(id), 0};
}

/// Whether layers `a` and `b` (each after the layer named with it) are alike op by op.
bool alike(const ir::Graph& graph, const Stacks& stacks, int a, int beforeA, int b, int beforeB) {
  const Layer& first = stacks.layers[static_cast<size_t>(a)];
  const Layer& second = stacks.layers[static_cast<size_t>(b)];
  if (first.ops.size() != second.ops.size()) return false;
  for (size_t k = 0; k < first.ops.size(); ++k) {
    const ir::Op& x = graph.op(first.ops[k]);
    const ir::Op& y = graph.op(second.ops[k]);
    if (x.kind != y.kind || !(x.attrs == y.attrs) || x.shard != y.shard ||
        x.recompute != y.recompute || x.placement != y.placement ||
        x.inputs.size() != y.inputs.size() || graph.inputTypes(x) != graph.inputTypes(y) ||
        graph.outputTypes(x) != graph.outputTypes(y)) {
      return false;
    }
    for (size_t i = 0; i < x.inputs.size(); ++i) {
      if (inputKey(graph, stacks, x.inputs[i], a, beforeA) !=
              inputKey(graph, stacks, y.inputs[i], b, beforeB) ||
          graph.tensor(x.inputs[i]).parallelOptimizer !=
              graph.tensor(y.inputs[i]).parallelOptimizer) {
        return false;
      }
    }
  }
  return true;
}

/// Rebuilds `graph` with the ops kept as themselves (`keptAs[op] == op`); every other op's
/// outputs read as those of the op it is kept as. Nullopt when that op comes later.
std::optional<LayerFold> rebuild(const ir::Graph& graph, const std::vector<ir::OpId>& keptAs) {
  LayerFold fold{
      ir::Graph(graph.name()), std::vector<ir::OpId>(graph.ops().size(), ir::kNoOp), {}, {}};
  std::vector<ir::TensorId> tensorOf(graph.tensors().size(), -1);
  for (const ir::Op& op : graph.ops()) {
    if (keptAs[op.id] != op.id) {
      const ir::OpId representative = fold.representative[keptAs[op.id]];
      if (representative == ir::kNoOp) return std::nullopt;  // not built yet: layers interleave
      fold.representative[op.id] = representative;
      for (size_t j = 0; j < op.outputs.size(); ++j) {
        tensorOf[op.outputs[j]] = fold.graph.op(representative).outputs[j];
      }
      continue;
    }
    std::vector<ir::TensorId> inputs;
    for (ir::TensorId id : op.inputs) {
      if (tensorOf[id] < 0) {
        const ir::Tensor& tensor = graph.tensor(id);
        auto added = fold.graph.addTensor(tensor.name, tensor.type, tensor.role);
        if (!added) return std::nullopt;
        fold.graph.mutableTensor(*added).parallelOptimizer = tensor.parallelOptimizer;
        tensorOf[id] = *added;
      }
      inputs.push_back(tensorOf[id]);
    }
    std::vector<std::string> names;
    for (ir::TensorId id : op.outputs) names.push_back(graph.tensor(id).name);
    auto added = fold.graph.addOp(op.name, op.kind, op.attrs, inputs, names, op.block);
    if (!added) return std::nullopt;
    ir::Op& copy = fold.graph.mutableOp(*added);
    copy.shard = op.shard;
    copy.recompute = op.recompute;
    copy.placement = op.placement;
    fold.representative[op.id] = *added;
    for (size_t j = 0; j < op.outputs.size(); ++j) tensorOf[op.outputs[j]] = copy.outputs[j];
  }
  for (const auto& [scope, settings] : graph.blockSettings()) {
    // A scope of dropped layers alone has no op left to set; its layers take their
    // representative's settings.
    (void)fold.graph.setBlockSettings(scope, settings);
  }
  return fold;
}

}  // namespace

std::optional<LayerFold> foldRepeatedLayers(const ir::Graph& graph) {
  const Stacks stacks = findStacks(graph);
  std::vector<ir::OpId> keptAs(graph.ops().size());
  for (const ir::Op& op : graph.ops()) keptAs[op.id] = op.id;
  std::vector<std::string> summary;
  for (const auto& [prefix, layers] : stacks.byPrefix) {
    if (layers.size() < 3) continue;
    const auto layer = [&](size_t i) { return static_cast<int>(layers[i]); };
    bool foldable = true;
    for (size_t i = 2; i < layers.size() && foldable; ++i) {
      foldable = alike(graph, stacks, layer(1), layer(0), layer(i), layer(i - 1));
    }
    if (!foldable) continue;
    const Layer& second = stacks.layers[layers[1]];
    for (size_t i = 2; i < layers.size(); ++i) {
      const Layer& later = stacks.layers[layers[i]];
      for (size_t k = 0; k < later.ops.size(); ++k) keptAs[later.ops[k]] = second.ops[k];
    }
    summary.push_back(fmt::format("{}: {} layers, those after the first alike: decided as 2",
                                  prefix, layers.size()));
  }
  if (summary.empty()) return std::nullopt;
  auto fold = rebuild(graph, keptAs);
  if (!fold) return std::nullopt;
  // Each op of the fold stands for the ops it represents, itself among them.
  std::vector<double> copies(fold->graph.ops().size(), 0);
  for (ir::OpId representative : fold->representative) copies[representative] += 1;
  fold->copies = OpCopies(std::move(copies));
  fold->summary = std::move(summary);
  return fold;
}

std::vector<rules::FactorCuts> unfoldCuts(const LayerFold& fold,
                                          const std::vector<rules::FactorCuts>& foldedCuts) {
  std::vector<rules::FactorCuts> cuts;
  cuts.reserve(fold.representative.size());
  for (ir::OpId representative : fold.representative) cuts.push_back(foldedCuts[representative]);
  return cuts;
}

}  // namespace autopar::search
