#include "cost/parameters.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace autopar::cost {

namespace {

layout::TensorLayout inputLayout(const ir::Op& op, const rules::ShardedOp& shard,
                                 ir::TensorId tensor) {
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i] == tensor) return shard.inputs[i].withoutPartial();
  }
  return {};
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

/// `placement.use` split further over its replica axes: on the first dim of its slice that
/// divides by the replica count, or with `padToShard` on the largest dim, that dim's size padded
/// up to whole slices (a [6144] bias replicated 2240 ways becomes [6720] cut 2240 ways, 3
/// elements per device). Sets shardDim; nullopt when no dim divides and padding is off.
std::optional<layout::TensorLayout> optimizerSlice(ParameterPlacement& placement,
                                                   const OptimizerParallelOptions& options) {
  const ir::Shape slice = placement.use.sliceShape();
  auto dim = static_cast<size_t>(
      std::find_if(slice.begin(), slice.end(),
                   [&](int64_t size) { return size % placement.replicas == 0; }) -
      slice.begin());
  if (dim == slice.size()) {
    if (!options.padToShard) return std::nullopt;
    dim = static_cast<size_t>(std::max_element(slice.begin(), slice.end()) - slice.begin());
  }
  layout::TensorLayout sliced = placement.use;
  const std::vector<int> axes = placement.use.replicaAxes();
  sliced.dimAxes[dim].insert(sliced.dimAxes[dim].end(), axes.begin(), axes.end());
  const int64_t cuts = sliced.cutsOfDim(static_cast<int>(dim));
  sliced.shape[dim] = (sliced.shape[dim] + cuts - 1) / cuts * cuts;
  placement.shardDim = static_cast<int>(dim);
  return sliced;
}

void shardForOptimizer(const ir::Tensor& tensor, ParameterPlacement& placement,
                       const OptimizerParallelOptions& options) {
  placement.note = keepWholeReason(tensor, placement, options);
  if (!placement.note.empty()) return;
  if (options.groupUpdate && !options.distributedOptimizer) {
    placement.optimizerShards = placement.replicas;
    return;
  }
  auto sliced = optimizerSlice(placement, options);
  if (!sliced) {
    placement.note = fmt::format("no dim of slice {} divides by {}",
                                 ir::shapeToString(placement.use.sliceShape()), placement.replicas);
    if (options.groupUpdate) placement.optimizerShards = placement.replicas;
    return;
  }
  placement.optimizerShards = placement.replicas;
  placement.gradientTarget = *sliced;
  // Group update keeps the parameter whole; only its gradient and states are cut.
  if (!options.groupUpdate) placement.storage = std::move(*sliced);
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
    placement.gradientTarget = placement.use;
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
  // Group update keeps whole gradients (Megatron's buffer, MindSpore's data-parallel mode).
  const bool sliced =
      options.gradientAccumulationShard || (!options.accumulates && !options.groupUpdate);
  bytes.gradient = sliced ? stored.gradient : use.gradient;
  // Group update keeps whole parameters but each device holds the states of 1/shards of them.
  bytes.optimizer =
      options.groupUpdate ? use.optimizer / placement.optimizerShards : stored.optimizer;
  if (options.groupUpdate && options.gradientAccumulationShard) {
    bytes.gradient = use.gradient / placement.optimizerShards;
  }
  return bytes;
}

}  // namespace autopar::cost
