#include "cost/op_cost.h"

#include <fmt/format.h>

#include <algorithm>

#include "cluster/collective.h"
#include "cost/compute.h"
#include "cost/constants.h"
#include "rules/sharding_rule.h"

namespace autopar::cost {

namespace {

double internalCommSeconds(const cluster::Cluster& cluster, const rules::ShardedOp& shard,
                           const rules::ShardingRule& rule) {
  double seconds = 0;
  for (const auto& internal : rule.internal) {
    const int axis = shard.factorAxis[internal.factor];
    if (axis < 0) continue;
    int64_t divisor = 1;
    for (int factor : internal.shardedBy) divisor *= shard.cuts[factor];
    const int64_t elements = (internal.forwardElements + internal.backwardElements) / divisor;
    const std::vector<int> axes{axis};
    // Statistics travel in fp32.
    seconds += cluster::collectiveCost(cluster, cluster::Collective::kAllReduce,
                                       shard.matrix.group(0, axes), elements * 4)
                   .seconds;
  }
  return seconds;
}

/// Share of the op's input and output bytes one device holds.
double localIoShare(const ir::Graph& graph, const ir::Op& op, const rules::ShardedOp& shard) {
  double fullBytes = 0;
  double localBytes = 0;
  auto add = [&](ir::TensorId id, const layout::TensorLayout& layout) {
    const auto& type = graph.tensor(id).type;
    fullBytes += static_cast<double>(type.bytes());
    localBytes += static_cast<double>(layout.sliceElements() * ir::dtypeBytes(type.dtype));
  };
  for (size_t i = 0; i < op.inputs.size(); ++i) add(op.inputs[i], shard.inputs[i]);
  for (size_t j = 0; j < op.outputs.size(); ++j) add(op.outputs[j], shard.outputs[j]);
  return fullBytes > 0 ? localBytes / fullBytes : 0;
}

}  // namespace

Expected<OpCost> costOfOp(const ir::Graph& graph, const ir::Op& op, const rules::ShardedOp& shard,
                          const cluster::Cluster& cluster, double fusedBytes, bool ownKernel) {
  auto rule = rules::shardingRuleFor(graph, op);
  if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
  const double share = localIoShare(graph, op, shard);
  const double unfusedBytes = static_cast<double>(graph.forwardBytes(op)) * share;
  const double forwardBytes = std::max(unfusedBytes - fusedBytes, 0.0);
  const double keptShare = unfusedBytes > 0 ? forwardBytes / unfusedBytes : 1.0;
  const ir::BackwardRule backward = graph.backwardRule(op);
  OpCost cost;
  cost.forwardFlops = graph.forwardFlops(op) * shard.computeFraction;
  cost.backwardFlops = backward.flops * shard.computeFraction;
  const std::optional<rules::LocalGemm> gemm = rules::localGemm(*rule, shard.cuts);
  cost.forwardSeconds =
      rooflineSeconds(graph, op, cost.forwardFlops, forwardBytes, gemm, cluster.device);
  // Backward reads the saved tensors and the output gradient and writes the input gradients: the
  // traffic the op's family gives, else about twice the forward traffic.
  const double backwardBytes = backward.bytes >= 0
                                   ? static_cast<double>(backward.bytes) * share * keptShare
                                   : 2 * forwardBytes;
  cost.backwardSeconds =
      rooflineSeconds(graph, op, cost.backwardFlops, backwardBytes, gemm, cluster.device);
  // Every kernel takes at least a launch's time: the op's forward kernel, and backward one per
  // input it propagates a gradient to (a GEMM's data- and weight-gradient GEMMs). An op fused
  // into the kernel before it pays none.
  const CostConstants& constants = costConstants().forDevice(cluster.device.name);
  const double launch = ownKernel ? constants.kernelLaunchSeconds : 0.0;
  const auto gradientKernels = static_cast<double>(std::clamp<size_t>(op.inputs.size(), 1, 3));
  cost.forwardSeconds = std::max(cost.forwardSeconds, launch);
  cost.backwardSeconds = std::max(cost.backwardSeconds, launch * gradientKernels);
  if (op.attrs.fp8) {
    // Transformer Engine casts each GEMM operand to fp8 with a kernel of its own (cast and
    // transpose, the amax fused in): the input activation forward, the output gradient backward,
    // each read in bf16 and written twice in fp8 (row- and column-major), 4 bytes an element.
    // The weights' fp8 copies are cast once per step and cached across micro-batches
    // (is_first_microbatch), so they are not counted per micro-batch.
    constexpr double kCastBytesPerElement = 4;
    auto castSeconds = [&](const layout::TensorLayout& operand) {
      const double bytes = kCastBytesPerElement * static_cast<double>(operand.sliceElements());
      return std::max(launch, memorySeconds(cluster.device, bytes));
    };
    cost.forwardSeconds += castSeconds(shard.inputs[0]);
    cost.backwardSeconds += castSeconds(shard.outputs[0]);
  }
  cost.internalCommSeconds = internalCommSeconds(cluster, shard, *rule);
  return cost;
}

}  // namespace autopar::cost
