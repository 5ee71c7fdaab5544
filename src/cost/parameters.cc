#include "cost/parameters.h"

#include <fmt/format.h>

#include <algorithm>

namespace autopar::cost {

namespace {

layout::TensorLayout inputLayout(const ir::Op& op, const rules::ShardedOp& shard,
                                 ir::TensorId tensor) {
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i] == tensor) return shard.inputs[i].withoutPartial();
  }
  return {};
}

/// Device-matrix axes that split no dim of `layout`: the devices along them hold the same slice.
std::vector<int> replicaAxes(const layout::TensorLayout& layout) {
  std::vector<bool> used(static_cast<size_t>(layout.deviceMatrix.numAxes()), false);
  for (const auto& axes : layout.dimAxes) {
    for (int axis : axes) used[static_cast<size_t>(axis)] = true;
  }
  std::vector<int> free;
  for (int axis = 0; axis < layout.deviceMatrix.numAxes(); ++axis) {
    if (!used[static_cast<size_t>(axis)] && layout.deviceMatrix.axisSize(axis) > 1) {
      free.push_back(axis);
    }
  }
  return free;
}

/// Why `placement` stays whole, or empty when it should be sharded.
std::string keepWholeReason(const ir::Tensor& tensor, const ParameterPlacement& placement,
                            const OptimizerParallelOptions& options) {
  if (placement.onHost) return "on the host";
  if (placement.replicas == 1) return "not replicated";
  if (tensor.parallelOptimizer == false) return "parallel_optimizer false";
  const int64_t sliceBytes = placement.use.sliceElements() * ir::dtypeBytes(tensor.type.dtype);
  if (tensor.parallelOptimizer != true && sliceBytes <= options.thresholdKb * 1024) {
    return fmt::format("{} B <= parallel_optimizer_threshold {} KB", sliceBytes,
                       options.thresholdKb);
  }
  return "";
}

void shardForOptimizer(const ir::Tensor& tensor, ParameterPlacement& placement,
                       const OptimizerParallelOptions& options) {
  placement.note = keepWholeReason(tensor, placement, options);
  if (!placement.note.empty()) return;
  if (options.groupUpdate) {
    placement.optimizerShards = placement.replicas;
    return;
  }
  const ir::Shape slice = placement.use.sliceShape();
  for (size_t dim = 0; dim < slice.size(); ++dim) {
    if (slice[dim] % placement.replicas != 0) continue;
    const std::vector<int> axes = replicaAxes(placement.use);
    auto& dimAxes = placement.storage.dimAxes[dim];
    dimAxes.insert(dimAxes.end(), axes.begin(), axes.end());
    placement.optimizerShards = placement.replicas;
    placement.shardDim = static_cast<int>(dim);
    return;
  }
  placement.note =
      fmt::format("no dim of slice {} divides by {}", ir::shapeToString(slice), placement.replicas);
}

}  // namespace

std::vector<ParameterPlacement> placeParameters(const ir::Graph& graph,
                                                const std::vector<rules::ShardedOp>& sharded,
                                                const OptimizerParallelOptions& options) {
  std::vector<ParameterPlacement> placements;
  for (ir::TensorId id : graph.parameters()) {
    const ir::Tensor& tensor = graph.tensor(id);
    if (tensor.consumers.empty()) continue;
    ParameterPlacement placement;
    placement.tensor = id;
    placement.firstConsumer = tensor.consumers.front();
    const ir::Op& consumer = graph.op(placement.firstConsumer);
    placement.use = inputLayout(consumer, sharded[consumer.id], id);
    placement.storage = placement.use;
    placement.onHost = consumer.placement == ir::Placement::kHost;
    placement.replicas =
        placement.use.deviceMatrix.numDevices() /
        std::max<int64_t>(1, ir::numElements(placement.use.shape) / placement.use.sliceElements());
    if (!consumer.attrs.manualSplit.empty() && consumer.inputs.front() == id) {
      const auto& parts = consumer.attrs.manualSplit;
      placement.unevenScale = static_cast<double>(*std::max_element(parts.begin(), parts.end())) *
                              static_cast<double>(parts.size()) /
                              static_cast<double>(tensor.type.shape.front());
    }
    if (options.enabled) shardForOptimizer(tensor, placement, options);
    placements.push_back(std::move(placement));
  }
  return placements;
}

Status checkManualSplits(const ir::Graph& graph, const std::vector<rules::ShardedOp>& sharded) {
  for (const ir::Op& op : graph.ops()) {
    const auto& parts = op.attrs.manualSplit;
    if (parts.empty()) continue;
    const int64_t cuts = sharded[op.id].inputs.front().cutsOfDim(0);
    if (static_cast<int64_t>(parts.size()) != cuts) {
      return Error{
          fmt::format("op '{}': attrs.manual_split has {} parts but its strategy cuts dim 0 "
                      "of input 0 into {}",
                      op.name, parts.size(), cuts)};
    }
  }
  return {};
}

ParameterStateBytes placedStateBytes(const ir::Graph& graph, const ParameterPlacement& placement,
                                     const OptimizerParallelOptions& options,
                                     const OptimizerSpec& optimizer) {
  const ir::Tensor& tensor = graph.tensor(placement.tensor);
  auto scaled = [&](int64_t elements) {
    return static_cast<int64_t>(static_cast<double>(elements) * placement.unevenScale);
  };
  const int64_t useElements = scaled(placement.use.sliceElements());
  const int64_t storedElements = scaled(placement.storage.sliceElements());
  const auto use = parameterStateBytes(useElements, tensor.type.dtype, optimizer);
  const auto stored = parameterStateBytes(storedElements, tensor.type.dtype, optimizer);
  ParameterStateBytes bytes;
  bytes.weight = stored.weight;
  bytes.gradient = options.gradientAccumulationShard ? stored.gradient : use.gradient;
  // Group update keeps whole parameters but each device holds the states of 1/shards of them.
  bytes.optimizer =
      options.groupUpdate ? use.optimizer / placement.optimizerShards : stored.optimizer;
  if (options.groupUpdate && options.gradientAccumulationShard) {
    bytes.gradient = use.gradient / placement.optimizerShards;
  }
  return bytes;
}

}  // namespace autopar::cost
