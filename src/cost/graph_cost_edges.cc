#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "cost/graph_cost_context.h"

namespace autopar::cost::detail {

namespace {

/// Bytes per element of `tensor`'s gradient as it is reduced: a parameter's gradient in the
/// dtype it accumulates in (fp32 with OptimizerSpec::fp32Gradients, Megatron-LM's main_grad;
/// cast back to the weight's under keepsLowPrecisionGradients), any other gradient in the
/// tensor's own dtype.
int64_t gradientElementBytes(const Context& ctx, ir::TensorId tensor) {
  const int64_t bytes = elementBytes(ctx.graph, tensor);
  if (!ctx.graph.tensor(tensor).isParameter()) return bytes;
  return ctx.options.optimizer.reducedGradientBytes(bytes);
}

/// A mixture-of-experts token exchange: the dispatched slots on their way to the experts, or the
/// experts' outputs on their way back to be combined (and, in backward, their gradients).
bool isExpertExchange(const ir::Graph& graph, const ir::Tensor& tensor) {
  if (tensor.producer != ir::kNoOp && graph.op(tensor.producer).kind == ir::OpKind::kMoEDispatch) {
    return true;
  }
  return std::any_of(tensor.consumers.begin(), tensor.consumers.end(), [&](ir::OpId consumer) {
    return graph.op(consumer).kind == ir::OpKind::kMoECombine;
  });
}

Expected<layout::Redistribution> plan(Context& ctx, ir::TensorId tensor,
                                      const layout::TensorLayout& from,
                                      const layout::TensorLayout& to, int64_t bytesPerElement) {
  auto result = ctx.redistributions.plan(from, to, bytesPerElement);
  if (!result) {
    return result.error().in(fmt::format("tensor '{}'", ctx.graph.tensor(tensor).name));
  }
  return result;
}

/// Plans an activation's redistribution, or its gradient's. `fp8Gemm`: the activation goes into
/// fp8 GEMMs alone (forward), or an fp8 GEMM made it (backward). An fp8 GEMM's input is cast
/// before it is gathered, and so is the gradient of its output: a redistribution that only
/// gathers (under sequence parallelism, the sequence all-gather) moves one byte an element.
/// Transformer Engine's LayerNormLinear and Linear gather the fp8-cast input and the fp8-cast
/// output gradient; torchao's Float8ColwiseParallel, PrepareFloat8ModuleInput and
/// Float8RowwiseParallel (torchtitan's float8 TP plan) do the same. Reductions, token exchanges
/// and parameters (FSDP's float8 all-gather is an option of its own, off by default) keep the
/// tensor's dtype.
Expected<layout::Redistribution> planCastBeforeGather(Context& ctx, const ir::Tensor& tensor,
                                                      bool fp8Gemm,
                                                      const layout::TensorLayout& from,
                                                      const layout::TensorLayout& to,
                                                      int64_t bytes) {
  auto redistribution = plan(ctx, tensor.id, from, to, bytes);
  if (!redistribution || !fp8Gemm || tensor.isParameter() || redistribution->empty() ||
      isExpertExchange(ctx.graph, tensor)) {
    return redistribution;
  }
  const bool onlyGathers =
      std::all_of(redistribution->steps.begin(), redistribution->steps.end(), [](const auto& step) {
        return step.kind == layout::PrimitiveKind::kAllGather ||
               step.kind == layout::PrimitiveKind::kSplit;
      });
  const int64_t fp8Bytes = ir::dtypeBytes(ir::DType::kFP8);
  if (!onlyGathers || bytes <= fp8Bytes) return redistribution;
  return plan(ctx, tensor.id, from, to, fp8Bytes);
}

/// Whether every use of `tensor` that shares the redistribution into `target` on `stage` is an
/// fp8 GEMM: one gather serves them all, so it is cast only when all of them take fp8.
bool onlyFp8GemmsRead(const Context& ctx, const ir::Tensor& tensor,
                      const layout::TensorLayout& target, int stage) {
  for (ir::OpId consumerId : tensor.consumers) {
    const ir::Op& consumer = ctx.graph.op(consumerId);
    if (ctx.stageOf[consumerId] != stage) continue;
    for (size_t i = 0; i < consumer.inputs.size(); ++i) {
      if (consumer.inputs[i] == tensor.id && ctx.sharded[consumerId].inputs[i] == target &&
          !consumer.attrs.fp8) {
        return false;
      }
    }
  }
  return true;
}

/// Calls `visit(layout, consumer)` once per distinct (layout, stage) among the uses of `tensor`,
/// with `layoutOf(consumer, index)` giving each use's layout, in graph order.
template <class LayoutOf, class Visit>
Status forEachDistinctUse(const Context& ctx, const ir::Tensor& tensor, LayoutOf layoutOf,
                          Visit visit) {
  std::vector<std::pair<layout::TensorLayout, int>> seen;
  for (ir::OpId consumerId : tensor.consumers) {
    const ir::Op& consumer = ctx.graph.op(consumerId);
    for (size_t i = 0; i < consumer.inputs.size(); ++i) {
      if (consumer.inputs[i] != tensor.id) continue;
      auto use = std::make_pair(layoutOf(consumerId, i), ctx.stageOf[consumerId]);
      if (std::find(seen.begin(), seen.end(), use) != seen.end()) continue;
      seen.push_back(use);
      if (auto status = visit(use.first, consumerId); !status) return status;
    }
  }
  return {};
}

void addParameterCollective(Context& ctx, const ir::Tensor& tensor, ir::OpId consumer,
                            bool gradient, layout::Redistribution redistribution) {
  const ir::Op& op = ctx.graph.op(consumer);
  ParameterCollective collective;
  collective.parameter = tensor.name;
  collective.block = op.block;
  collective.stage = ctx.stageOf[consumer];
  collective.fusionId = ctx.graph.settingsOf(op).commFusion;
  collective.gradient = gradient;
  // A gradient is complete when the backward reaches the parameter's first consumer.
  const ir::OpId first = tensor.consumers.front();
  const double total = ctx.stageBackwardSeconds[static_cast<size_t>(collective.stage)];
  collective.readyFraction = total > 0 ? ctx.backwardDoneSeconds[first] / total : 1.0;
  collective.redistribution = std::move(redistribution);
  ctx.parameterCollectives.push_back(std::move(collective));
}

/// An activation redistribution's seconds on its consumer's stage, in one pass; a token exchange,
/// the context-parallel ring and the all-reduce steps are also counted apart.
void addActivationComm(Context& ctx, const ir::Tensor& tensor, ir::OpId consumer,
                       const layout::Redistribution& redistribution, bool forward) {
  StageCost& stage = ctx.stage(consumer);
  const double seconds = redistribution.seconds;
  (forward ? stage.forwardCommSeconds : stage.backwardCommSeconds) += seconds;
  for (const layout::RedistStep& step : redistribution.steps) {
    if (step.kind != layout::PrimitiveKind::kAllReduce) continue;
    (forward ? stage.forwardAllReduceSeconds : stage.backwardAllReduceSeconds) += step.seconds;
  }
  if (isExpertExchange(ctx.graph, tensor)) {
    (forward ? stage.forwardExchangeSeconds : stage.backwardExchangeSeconds) += seconds;
  }
  // What the attention core receives, or hands back, is the context-parallel ring's keys and
  // values: its other inputs arrive in the layout the projections made.
  if (ir::isAttentionCore(ctx.graph.op(consumer).kind)) {
    (forward ? stage.forwardRingSeconds : stage.backwardRingSeconds) += seconds;
  }
}

/// Records the non-empty redistribution of `tensor` (forward) or of its gradient (backward) at
/// `consumer`: a parameter's as a parameter collective (a gradient sync in backward), an
/// activation's as traffic on the consumer's stage; every one as an edge of the report.
void recordEdge(Context& ctx, const ir::Tensor& tensor, ir::OpId consumer, EdgeDirection direction,
                layout::Redistribution redistribution) {
  const bool forward = direction == EdgeDirection::kForward;
  if (tensor.isParameter()) {
    addParameterCollective(ctx, tensor, consumer, !forward, redistribution);
  } else {
    addActivationComm(ctx, tensor, consumer, redistribution, forward);
  }
  ctx.report.redistributions.push_back(
      EdgeRedistribution{tensor.id, tensor.producer, consumer, direction,
                         !forward && tensor.isParameter(), std::move(redistribution)});
}

/// The gradient a consumer hands back for its input `index`: its input layout, partial over the
/// axes of the cut factors the input does not carry.
layout::TensorLayout gradientLayout(const rules::ShardedOp& op, size_t index) {
  layout::TensorLayout grad = op.inputs[index].withoutPartial();
  grad.partialAxes = op.inputGradPartialAxes[index];
  std::sort(grad.partialAxes.begin(), grad.partialAxes.end());
  return grad;
}

}  // namespace

/// Consumers that need the same layout on the same stage share one redistribution.
Status costForwardEdges(Context& ctx) {
  ctx.forwardSeconds.resize(ctx.graph.tensors().size());
  for (const ir::Tensor& tensor : ctx.graph.tensors()) {
    if (tensor.consumers.empty()) continue;
    const layout::TensorLayout& source = ctx.sources[static_cast<size_t>(tensor.id)];
    auto inputLayout = [&](ir::OpId op, size_t i) { return ctx.sharded[op].inputs[i]; };
    auto status = forEachDistinctUse(
        ctx, tensor, inputLayout, [&](const layout::TensorLayout& target, ir::OpId consumer) {
          const bool fp8Gemm = onlyFp8GemmsRead(ctx, tensor, target, ctx.stageOf[consumer]);
          auto redistribution = planCastBeforeGather(ctx, tensor, fp8Gemm, source, target,
                                                     elementBytes(ctx.graph, tensor.id));
          if (!redistribution) return Status{redistribution.error()};
          ctx.forwardSeconds[static_cast<size_t>(tensor.id)].emplace_back(target,
                                                                          redistribution->seconds);
          if (!redistribution->empty()) {
            recordEdge(ctx, tensor, consumer, EdgeDirection::kForward, std::move(*redistribution));
          }
          return Status{};
        });
    if (!status) return status;
  }
  return {};
}

/// Consumers that hand back the same gradient layout sum locally before any communication.
Status costBackwardEdges(Context& ctx) {
  for (const ir::Tensor& tensor : ctx.graph.tensors()) {
    if (tensor.role == ir::TensorRole::kInput || tensor.consumers.empty()) continue;
    if (!ir::isFloating(tensor.type.dtype)) continue;
    const auto& targets = tensor.isParameter() ? ctx.gradientTargets : ctx.sources;
    const layout::TensorLayout target = targets[static_cast<size_t>(tensor.id)].withoutPartial();
    auto gradLayout = [&](ir::OpId op, size_t i) { return gradientLayout(ctx.sharded[op], i); };
    const bool fp8Gemm = tensor.producer != ir::kNoOp && ctx.graph.op(tensor.producer).attrs.fp8;
    const int64_t bytes = gradientElementBytes(ctx, tensor.id);
    auto status = forEachDistinctUse(
        ctx, tensor, gradLayout, [&](const layout::TensorLayout& grad, ir::OpId consumer) {
          auto redistribution = planCastBeforeGather(ctx, tensor, fp8Gemm, grad, target, bytes);
          if (!redistribution) return Status{redistribution.error()};
          if (!redistribution->empty()) {
            recordEdge(ctx, tensor, consumer, EdgeDirection::kBackward, std::move(*redistribution));
          }
          return Status{};
        });
    if (!status) return status;
  }
  return {};
}

}  // namespace autopar::cost::detail
