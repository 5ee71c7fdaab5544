#include "search/op_level/objective.h"

#include <fmt/format.h>

#include "cost/compute.h"
#include "cost/memory.h"
#include "cost/op_cost.h"
#include "cost/optimizer_step.h"

namespace autopar::search {

Expected<double> parameterSyncSeconds(const ir::Graph& graph, const ir::Op& op,
                                      const rules::ShardedOp& shard, EdgeCostCache& edges) {
  double total = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const ir::Tensor& tensor = graph.tensor(op.inputs[i]);
    if (!tensor.isParameter() || tensor.consumers.front() != op.id) continue;
    // Stored as this op needs it; its gradient reduces over the axes the op leaves partial.
    auto seconds =
        edges.edgeSeconds(shard.inputs[i], shard.inputs[i], shard.inputGradPartialAxes[i],
                          ir::dtypeBytes(tensor.type.dtype), true);
    if (!seconds) return seconds;
    total += *seconds;
  }
  return total;
}

Expected<NodeCost> nodeCost(const ir::Graph& graph, const ir::Op& op, const rules::ShardedOp& shard,
                            const cluster::Cluster& cluster,
                            const cost::CostConstants& deviceConstants, EdgeCostCache& edges) {
  const cost::DeviceModel device{cluster.device, deviceConstants};
  auto sync = parameterSyncSeconds(graph, op, shard, edges);
  if (!sync) return sync.error();
  NodeCost cost{cost::costOfOp(graph, op, shard, cluster, deviceConstants).totalSeconds() + *sync,
                0};
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const ir::Tensor& tensor = graph.tensor(op.inputs[i]);
    if (!tensor.isParameter() || tensor.consumers.front() != op.id) continue;
    const int64_t elements = shard.inputs[i].sliceElements();
    cost.bytes += cost::parameterStateBytes(elements, tensor.type.dtype, {}).total();
    // The optimizer updates every element a device keeps: a replicated weight costs each
    // replica the whole update (the step's memory traffic, cost/optimizer_step.h).
    cost.seconds +=
        cost::memorySeconds(device, static_cast<double>(elements) *
                                        cost::optimizerBytesPerElement(tensor.type.dtype, {}));
  }
  for (const ir::SavedTensor& saved : graph.backwardRule(op).saved) {
    using Source = ir::SavedTensor::Source;
    if (saved.source == Source::kExtra) {
      cost.bytes += static_cast<int64_t>(static_cast<double>(saved.bytes) * shard.computeFraction);
      continue;
    }
    const bool input = saved.source == Source::kInput;
    const ir::TensorId id = input ? op.inputs[saved.index] : op.outputs[saved.index];
    if (graph.tensor(id).isParameter()) continue;
    const auto& layout = input ? shard.inputs[saved.index] : shard.outputs[saved.index];
    cost.bytes +=
        layout.sliceElements() * ir::dtypeBytes(saved.keptAs.value_or(graph.tensor(id).type.dtype));
  }
  return cost;
}

Expected<double> inputEdgeSeconds(const ir::Graph& graph, const ir::Op& consumer, size_t index,
                                  const rules::ShardedOp& producer,
                                  const rules::ShardedOp& consumerShard, EdgeCostCache& edges) {
  const ir::Tensor& tensor = graph.tensor(consumer.inputs[index]);
  const ir::Op& producerOp = graph.op(tensor.producer);
  size_t output = 0;
  while (producerOp.outputs[output] != tensor.id) ++output;
  auto seconds =
      edges.edgeSeconds(producer.outputs[output], consumerShard.inputs[index],
                        consumerShard.inputGradPartialAxes[index],
                        ir::dtypeBytes(tensor.type.dtype), ir::isFloating(tensor.type.dtype));
  if (!seconds) return seconds.error().in(fmt::format("tensor '{}'", tensor.name));
  return seconds;
}

Expected<double> assignmentSeconds(const ir::Graph& graph,
                                   const std::vector<rules::ShardedOp>& shards,
                                   const cluster::Cluster& cluster,
                                   const cost::CostConstants& deviceConstants, EdgeCostCache& edges,
                                   const std::vector<double>* nodeSeconds, const OpCopies& copies) {
  double total = 0;
  for (const ir::Op& consumer : graph.ops()) {
    const rules::ShardedOp& shard = shards[consumer.id];
    if (nodeSeconds != nullptr) {
      total += (*nodeSeconds)[consumer.id] * copies.of(consumer.id);
    } else if (auto node = nodeCost(graph, consumer, shard, cluster, deviceConstants, edges)) {
      total += node->seconds * copies.of(consumer.id);
    } else {
      return node.error().in(fmt::format("op '{}'", consumer.name));
    }
    for (size_t i = 0; i < consumer.inputs.size(); ++i) {
      const ir::TensorId producer = graph.tensor(consumer.inputs[i]).producer;
      if (producer == ir::kNoOp) continue;
      auto seconds = inputEdgeSeconds(graph, consumer, i, shards[producer], shard, edges);
      if (!seconds) return seconds;
      total += *seconds * copies.ofEdge(producer, consumer.id);
    }
  }
  return total;
}

}  // namespace autopar::search
