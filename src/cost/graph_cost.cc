#include "cost/graph_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "cost/op_cost.h"

namespace autopar::cost {

namespace {

/// Bytes Adam touches per parameter element in one step: read the fp32 gradient, master weight
/// and two moments (16), write master and moments (12) and the bf16 weight copy (2).
constexpr double kOptimizerBytesPerElement = 30.0;
/// Streaming efficiency of HBM, as in compute.cc.
constexpr double kOptimizerMemoryEfficiency = 0.85;

struct Context {
  const ir::Graph& graph;
  const std::vector<rules::ShardedOp>& sharded;
  const cluster::Cluster& cluster;
  const EvaluateOptions& options;
  CostReport report;
};

int64_t elementBytes(const ir::Graph& graph, ir::TensorId tensor) {
  return ir::dtypeBytes(graph.tensor(tensor).type.dtype);
}

/// Where a tensor lives before its consumers read it: the producer's output layout, or for a
/// parameter or input, the layout its first consumer needs.
layout::TensorLayout sourceLayout(const Context& ctx, ir::TensorId tensorId) {
  const ir::Tensor& tensor = ctx.graph.tensor(tensorId);
  if (tensor.producer != ir::kNoOp) {
    const ir::Op& producer = ctx.graph.op(tensor.producer);
    for (size_t j = 0; j < producer.outputs.size(); ++j) {
      if (producer.outputs[j] == tensorId) return ctx.sharded[producer.id].outputs[j];
    }
  }
  const ir::Op& first = ctx.graph.op(tensor.consumers.front());
  for (size_t i = 0; i < first.inputs.size(); ++i) {
    if (first.inputs[i] == tensorId) return ctx.sharded[first.id].inputs[i];
  }
  return layout::TensorLayout::replicated(ctx.sharded[first.id].matrix, tensor.type.shape);
}

Status addRedistribution(Context& ctx, EdgeRedistribution edge, const layout::TensorLayout& from,
                         const layout::TensorLayout& to) {
  auto plan = layout::redistribute(from, to, ctx.cluster, elementBytes(ctx.graph, edge.tensor),
                                   ctx.options.redistribution);
  if (!plan) {
    return plan.error().in(fmt::format("tensor '{}'", ctx.graph.tensor(edge.tensor).name));
  }
  if (plan->empty()) return {};
  edge.redistribution = std::move(*plan);
  double& bucket = edge.isGradientSync ? ctx.report.time.gradientSyncSeconds
                                       : ctx.report.time.communicationSeconds;
  bucket += edge.redistribution.seconds;
  ctx.report.redistributions.push_back(std::move(edge));
  return {};
}

/// Calls `visit(layout, consumer)` once per distinct layout among the (consumer, input index)
/// uses of `tensor`, with `layoutOf(consumer, index)` giving each use's layout, in graph order.
template <class LayoutOf, class Visit>
Status forEachDistinctUse(const Context& ctx, const ir::Tensor& tensor, LayoutOf layoutOf,
                          Visit visit) {
  std::vector<layout::TensorLayout> seen;
  for (ir::OpId consumerId : tensor.consumers) {
    const ir::Op& consumer = ctx.graph.op(consumerId);
    for (size_t i = 0; i < consumer.inputs.size(); ++i) {
      if (consumer.inputs[i] != tensor.id) continue;
      layout::TensorLayout use = layoutOf(consumerId, i);
      if (std::find(seen.begin(), seen.end(), use) != seen.end()) continue;
      seen.push_back(use);
      if (auto status = visit(use, consumerId); !status) return status;
    }
  }
  return {};
}

/// Consumers that need the same layout share one redistribution of the tensor.
Status costForwardEdges(Context& ctx) {
  for (const ir::Tensor& tensor : ctx.graph.tensors()) {
    if (tensor.consumers.empty()) continue;
    const layout::TensorLayout source = sourceLayout(ctx, tensor.id);
    auto inputLayout = [&](ir::OpId op, size_t i) { return ctx.sharded[op].inputs[i]; };
    auto status = forEachDistinctUse(
        ctx, tensor, inputLayout, [&](const layout::TensorLayout& target, ir::OpId consumer) {
          EdgeRedistribution edge{
              tensor.id, tensor.producer, consumer, EdgeDirection::kForward, false, {}};
          return addRedistribution(ctx, edge, source, target);
        });
    if (!status) return status;
  }
  return {};
}

/// The gradient a consumer hands back for its input `index`: its input layout, partial over the
/// axes of the cut factors the input does not carry.
layout::TensorLayout gradientLayout(const rules::ShardedOp& op, size_t index) {
  layout::TensorLayout grad = op.inputs[index].withoutPartial();
  grad.partialAxes = op.inputGradPartialAxes[index];
  std::sort(grad.partialAxes.begin(), grad.partialAxes.end());
  return grad;
}

/// Consumers that hand back the same gradient layout sum locally before any communication.
Status costBackwardEdges(Context& ctx) {
  for (const ir::Tensor& tensor : ctx.graph.tensors()) {
    if (tensor.role == ir::TensorRole::kInput || tensor.consumers.empty()) continue;
    if (!ir::isFloating(tensor.type.dtype)) continue;
    const layout::TensorLayout target = sourceLayout(ctx, tensor.id).withoutPartial();
    auto gradLayout = [&](ir::OpId op, size_t i) { return gradientLayout(ctx.sharded[op], i); };
    auto status = forEachDistinctUse(
        ctx, tensor, gradLayout, [&](const layout::TensorLayout& grad, ir::OpId consumer) {
          EdgeRedistribution edge{
              tensor.id, tensor.producer, consumer, EdgeDirection::kBackward, tensor.isParameter(),
              {}};
          return addRedistribution(ctx, edge, grad, target);
        });
    if (!status) return status;
  }
  return {};
}

int64_t sliceBytes(const layout::TensorLayout& layout, ir::DType dtype) {
  return layout.sliceElements() * ir::dtypeBytes(dtype);
}

Status costOps(Context& ctx) {
  for (const ir::Op& op : ctx.graph.ops()) {
    auto cost = costOfOp(ctx.graph, op, ctx.sharded[op.id], ctx.cluster);
    if (!cost) return cost.error();
    ctx.report.time.computeSeconds += cost->forwardSeconds + cost->backwardSeconds;
    ctx.report.time.communicationSeconds += cost->internalCommSeconds;
    ctx.report.ops.push_back(*cost);
  }
  return {};
}

void costParameters(Context& ctx) {
  double optimizerBytes = 0;
  for (ir::TensorId id : ctx.graph.parameters()) {
    const ir::Tensor& tensor = ctx.graph.tensor(id);
    if (tensor.consumers.empty()) continue;
    const int64_t elements = sourceLayout(ctx, id).sliceElements();
    const auto state = parameterStateBytes(elements, tensor.type.dtype, ctx.options.optimizer);
    ctx.report.memory.parameterBytes += state.weight;
    ctx.report.memory.gradientBytes += state.gradient;
    ctx.report.memory.optimizerBytes += state.optimizer;
    optimizerBytes += static_cast<double>(elements) * kOptimizerBytesPerElement;
  }
  ctx.report.time.optimizerSeconds =
      optimizerBytes / (ctx.cluster.device.memoryBytesPerSecond * kOptimizerMemoryEfficiency);
}

/// Activations kept for backward, each tensor counted once, at its local size.
void costActivations(Context& ctx) {
  std::set<ir::TensorId> counted;
  int64_t bytes = 0;
  for (const ir::Op& op : ctx.graph.ops()) {
    const rules::ShardedOp& shard = ctx.sharded[op.id];
    const ir::BackwardRule backward = ctx.graph.backwardRule(op);
    for (const ir::SavedTensor& saved : backward.saved) {
      using Source = ir::SavedTensor::Source;
      if (saved.source == Source::kExtra) {
        const auto& output = ctx.graph.tensor(op.outputs.front()).type;
        const double share = static_cast<double>(shard.outputs.front().sliceElements()) /
                             static_cast<double>(ir::numElements(output.shape));
        bytes += static_cast<int64_t>(static_cast<double>(saved.bytes) * share);
        continue;
      }
      const bool isInput = saved.source == Source::kInput;
      const ir::TensorId id = isInput ? op.inputs[saved.index] : op.outputs[saved.index];
      if (ctx.graph.tensor(id).isParameter() || !counted.insert(id).second) continue;
      const auto& layout = isInput ? shard.inputs[saved.index] : shard.outputs[saved.index];
      bytes += sliceBytes(layout, ctx.graph.tensor(id).type.dtype);
    }
  }
  ctx.report.memory.activationBytes = bytes;
}

void costCommunicationBuffers(Context& ctx) {
  int64_t largest = 0;
  for (const auto& edge : ctx.report.redistributions) {
    for (const auto& step : edge.redistribution.steps)
      largest = std::max(largest, step.bytesPerDevice);
  }
  ctx.report.memory.communicationBytes = largest;
}

}  // namespace

Expected<CostReport> evaluateGraph(const ir::Graph& graph,
                                   const std::vector<rules::ShardedOp>& sharded,
                                   const cluster::Cluster& cluster,
                                   const EvaluateOptions& options) {
  if (sharded.size() != graph.ops().size()) {
    return Error{fmt::format("evaluateGraph: {} sharded ops for {} graph ops", sharded.size(),
                             graph.ops().size())};
  }
  if (graph.ops().empty()) return Error{fmt::format("graph '{}': has no ops", graph.name())};
  Context ctx{graph, sharded, cluster, options, {}};
  if (auto status = costOps(ctx); !status) return status.error();
  if (auto status = costForwardEdges(ctx); !status) return status.error();
  if (auto status = costBackwardEdges(ctx); !status) return status.error();
  costParameters(ctx);
  costActivations(ctx);
  costCommunicationBuffers(ctx);
  const auto numDevices = sharded.front().matrix.numDevices();
  ctx.report.memoryBytesByDevice.assign(static_cast<size_t>(numDevices), ctx.report.memory.total());
  return std::move(ctx.report);
}

}  // namespace autopar::cost
