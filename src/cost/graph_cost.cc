#include "cost/graph_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "cluster/collective.h"
#include "cost/activations.h"
#include "cost/comm_overlap.h"
#include "cost/compute.h"
#include "cost/graph_cost_context.h"
#include "cost/op_cost.h"
#include "cost/optimizer_step.h"

namespace autopar::cost {

namespace {

using detail::Context;
using detail::costBackwardEdges;
using detail::costForwardEdges;
using detail::elementBytes;

/// Host-side Adam: about 14 floating-point operations per element (moments, bias correction,
/// square root, division and update), at the host's compute rate.
constexpr double kHostOptimizerFlopsPerElement = 14.0;

layout::TensorLayout inputLayoutOf(const Context& ctx, const ir::Op& op, ir::TensorId tensor) {
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i] == tensor) return ctx.sharded[op.id].inputs[i];
  }
  return {};
}

/// Where each tensor lives before its consumers read it: the producer's output layout; for a
/// parameter its storage layout; for an input the layout its first consumer needs. A parameter's
/// gradient is reduced into its gradient target, or whole when the gradients are all-reduced
/// (OptimizerParallelOptions::gradientsAllReduced).
void placeSources(Context& ctx) {
  ctx.sources.resize(ctx.graph.tensors().size());
  ctx.gradientTargets.resize(ctx.graph.tensors().size());
  const bool allReduced = ctx.options.optimizerParallel.gradientsAllReduced;
  for (const ParameterPlacement& placement : ctx.report.parameters) {
    ctx.sources[static_cast<size_t>(placement.tensor)] = placement.storage;
    ctx.gradientTargets[static_cast<size_t>(placement.tensor)] =
        allReduced ? placement.use : placement.gradientTarget;
  }
  for (const ir::Tensor& tensor : ctx.graph.tensors()) {
    if (tensor.consumers.empty() || tensor.isParameter()) continue;
    auto& source = ctx.sources[static_cast<size_t>(tensor.id)];
    if (tensor.producer == ir::kNoOp) {
      source = inputLayoutOf(ctx, ctx.graph.op(tensor.consumers.front()), tensor.id);
      continue;
    }
    const ir::Op& producer = ctx.graph.op(tensor.producer);
    for (size_t j = 0; j < producer.outputs.size(); ++j) {
      if (producer.outputs[j] == tensor.id) source = ctx.sharded[producer.id].outputs[j];
    }
  }
}

/// A host-placed op computes at the host's rate and copies its device-side activations over PCIe
/// both ways: inputs in and outputs out in forward, their gradients back in backward.
OpCost hostOpCost(const Context& ctx, const ir::Op& op, OpCost cost, StageCost& stage) {
  const cluster::HostSpec& host = ctx.cluster.host;
  cost.forwardSeconds = host.flopsPerSecond > 0 ? cost.forwardFlops / host.flopsPerSecond : 0;
  cost.backwardSeconds = host.flopsPerSecond > 0 ? cost.backwardFlops / host.flopsPerSecond : 0;
  int64_t bytes = 0;
  const rules::ShardedOp& shard = ctx.sharded[op.id];
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (ctx.graph.tensor(op.inputs[i]).isParameter()) continue;
    bytes += shard.inputs[i].sliceElements() * elementBytes(ctx.graph, op.inputs[i]);
  }
  for (size_t j = 0; j < op.outputs.size(); ++j) {
    bytes += shard.outputs[j].sliceElements() * elementBytes(ctx.graph, op.outputs[j]);
  }
  if (host.linkBytesPerSecond > 0) {
    stage.hostTransferSeconds += 2.0 * static_cast<double>(bytes) / host.linkBytesPerSecond;
  }
  return cost;
}

bool isElementwise(const ir::Op& op) {
  const ir::OpFamily family = ir::familyOf(op.kind);
  return op.placement == ir::Placement::kDevice &&
         (family == ir::OpFamily::kElementwiseUnary || family == ir::OpFamily::kElementwiseBinary);
}

/// What elementwise fusion (CodePath::fusedElementwise) does to each op: an intermediate
/// from one elementwise op to the next is neither written by the producer nor read by the
/// consumer (`savedBytes`, per device), and the consumer runs inside the producer's kernel
/// (`continuesKernel`); per tensor, whether it is such an intermediate (`inKernel`, which the
/// activations read: cost/activations.h, "Fused chains"). Example: bias add -> dropout ->
/// residual add, Megatron-LM's bias-dropout-add kernel, saves two round trips of the hidden
/// state and two launches.
struct Fusion {
  std::vector<double> savedBytes;
  std::vector<bool> continuesKernel;
  std::vector<bool> inKernel;
};

/// Whether a weight is read by a GEMM that runs in fp8 (Transformer Engine's recipe).
bool feedsFp8Gemm(const ir::Graph& graph, const ir::Tensor& weight) {
  return std::any_of(weight.consumers.begin(), weight.consumers.end(),
                     [&](ir::OpId consumer) { return graph.op(consumer).attrs.fp8; });
}

Fusion fusion(const Context& ctx) {
  Fusion result{std::vector<double>(ctx.graph.ops().size(), 0.0),
                std::vector<bool>(ctx.graph.ops().size(), false),
                std::vector<bool>(ctx.graph.tensors().size(), false)};
  std::vector<double>& saved = result.savedBytes;
  if (!ctx.options.codePath.fusedElementwise) return result;
  for (const ir::Op& consumer : ctx.graph.ops()) {
    if (!isElementwise(consumer)) continue;
    for (size_t i = 0; i < consumer.inputs.size(); ++i) {
      const ir::Tensor& tensor = ctx.graph.tensor(consumer.inputs[i]);
      if (tensor.producer == ir::kNoOp || tensor.consumers.size() != 1) continue;
      const ir::Op& producer = ctx.graph.op(tensor.producer);
      const layout::TensorLayout& made = ctx.sources[static_cast<size_t>(tensor.id)];
      if (!isElementwise(producer) || ctx.stageOf[producer.id] != ctx.stageOf[consumer.id] ||
          !made.partialAxes.empty() || !(made == ctx.sharded[consumer.id].inputs[i])) {
        continue;
      }
      const auto bytes =
          static_cast<double>(made.sliceElements() * elementBytes(ctx.graph, tensor.id));
      saved[static_cast<size_t>(producer.id)] += bytes;
      saved[static_cast<size_t>(consumer.id)] += bytes;
      result.continuesKernel[static_cast<size_t>(consumer.id)] = true;
      result.inKernel[static_cast<size_t>(tensor.id)] = true;
    }
  }
  return result;
}

void costOps(Context& ctx) {
  Fusion fused = fusion(ctx);
  for (const ir::Op& op : ctx.graph.ops()) {
    const auto index = static_cast<size_t>(op.id);
    OpCost cost = costOfOp(ctx.graph, op, ctx.sharded[op.id], ctx.cluster, ctx.device.constants,
                           fused.savedBytes[index], !fused.continuesKernel[index]);
    StageCost& stage = ctx.stage(op.id);
    if (op.placement == ir::Placement::kHost) cost = hostOpCost(ctx, op, cost, stage);
    if (!ctx.options.codePath.fusedElementwise) {
      const double eager =
          memorySeconds(ctx.device, eagerRotaryBytes(ctx.graph, op, ctx.sharded[op.id]));
      cost.forwardSeconds += eager;
      cost.backwardSeconds += eager;
      if (!ctx.options.codePath.fusedNorm) {
        const EagerNormBytes norm = eagerNormBytes(ctx.graph, op, ctx.sharded[op.id]);
        cost.forwardSeconds += memorySeconds(ctx.device, norm.forward);
        cost.backwardSeconds += memorySeconds(ctx.device, norm.backward);
      }
    }
    if (ctx.options.codePath.ringMergesInFp32) {
      const RingMergeBytes merges = ringMergeBytes(op, ctx.sharded[op.id]);
      cost.forwardSeconds += memorySeconds(ctx.device, merges.forward);
      cost.backwardSeconds += memorySeconds(ctx.device, merges.backward);
    }
    stage.forwardComputeSeconds += cost.forwardSeconds;
    stage.backwardComputeSeconds += cost.backwardSeconds;
    if (ir::isAttentionCore(op.kind)) {
      stage.forwardAttentionSeconds += cost.forwardSeconds;
      stage.backwardAttentionSeconds += cost.backwardSeconds;
    }
    stage.forwardCommSeconds += cost.internalCommSeconds;
    ctx.report.ops.push_back(cost);
  }
  ctx.inFusedKernel = std::move(fused.inKernel);
  ctx.backwardDoneSeconds.assign(ctx.graph.ops().size(), 0.0);
  ctx.stageBackwardSeconds.assign(static_cast<size_t>(ctx.options.stages), 0.0);
  for (size_t i = ctx.graph.ops().size(); i-- > 0;) {
    double& total = ctx.stageBackwardSeconds[static_cast<size_t>(ctx.stageOf[i])];
    total += ctx.report.ops[i].backwardSeconds;
    ctx.backwardDoneSeconds[i] = total;
  }
}

/// The stages whose ops read `tensor`.
std::set<int> stagesUsing(const Context& ctx, const ir::Tensor& tensor) {
  std::set<int> stages;
  for (ir::OpId consumer : tensor.consumers) stages.insert(ctx.stageOf[consumer]);
  return stages;
}

/// Point-to-point cost between the devices of stage `from` and `to` holding the same slice.
double sendSeconds(const Context& ctx, int from, int to, int64_t bytes) {
  if (bytes == 0) return 0;
  const int physical = std::max(ctx.options.physicalStages, 1);
  const int ranks[] = {(from % physical) * ctx.options.rankStride,
                       (to % physical) * ctx.options.rankStride};
  if (ranks[0] == ranks[1]) return 0;
  return cluster::collectiveCost(ctx.cluster, cluster::Collective::kSendRecv, ranks, bytes).seconds;
}

/// One micro-batch's unfused gradient accumulation over `elements` weight elements of `dtype`
/// (CodePath::gradientAccumulationFusion): read the new gradient, read and write the
/// accumulator (fp32, or the weight's dtype when gradients are kept in it). BF16_Optimizer's
/// update_hp_grads casts the gradient to an fp32 temporary first (written, then read: 8 bytes).
double accumulationSeconds(const Context& ctx, int64_t elements, ir::DType dtype) {
  const OptimizerSpec& optimizer = ctx.options.optimizer;
  const int64_t weightBytes = ir::dtypeBytes(dtype);
  const int64_t castBytes = optimizer.keepsBothGradients() ? 8 : 0;
  return memorySeconds(ctx.device,
                       static_cast<double>(elements) *
                           static_cast<double>(weightBytes + castBytes +
                                               2 * optimizer.accumulatorBytes(weightBytes)));
}

/// Parameter states per stage; a parameter read on several stages (a tied embedding) is kept on
/// each and its gradient all-reduced between them, as Megatron-LM does.
Status costParameters(Context& ctx) {
  const auto& options = ctx.options;
  BufferGather bufferGather(ctx.cluster, options.redistribution);
  for (const ParameterPlacement& placement : ctx.report.parameters) {
    const ir::Tensor& tensor = ctx.graph.tensor(placement.tensor);
    const bool fp8Weight = feedsFp8Gemm(ctx.graph, tensor);
    const auto state =
        placedStateBytes(ctx.graph, placement, options.optimizerParallel, options.optimizer);
    const auto whole = parameterStateBytes(
        static_cast<int64_t>(static_cast<double>(placement.use.sliceElements()) *
                             placement.unevenScale),
        tensor.type.dtype, options.optimizer);
    const std::set<int> stages = stagesUsing(ctx, tensor);
    const double elements =
        static_cast<double>(options.optimizerParallel.groupUpdate
                                ? placement.use.sliceElements() / placement.optimizerShards
                                : placement.storage.sliceElements());
    for (int s : stages) {
      StageCost& stage = ctx.report.stages[static_cast<size_t>(s)];
      if (placement.onHost) {
        stage.memory.hostBytes += state.total();
        if (ctx.cluster.host.flopsPerSecond > 0) {
          stage.optimizerSeconds +=
              elements * kHostOptimizerFlopsPerElement / ctx.cluster.host.flopsPerSecond;
        }
        continue;
      }
      stage.optimizerParallelSavedBytes += whole.total() - state.total();
      if (!options.codePath.gradientAccumulationFusion) {
        stage.backwardComputeSeconds +=
            accumulationSeconds(ctx, placement.use.sliceElements(), tensor.type.dtype);
      }
      stage.memory.parameterBytes += state.weight;
      if (fp8Weight) {
        stage.memory.parameterBytes += placement.use.sliceElements() * options.fp8WeightCacheBytes;
      }
      stage.memory.gradientBytes += state.gradient;
      stage.memory.optimizerBytes += state.optimizer;
      stage.optimizerSeconds += memorySeconds(
          ctx.device, elements * optimizerBytesPerElement(tensor.type.dtype, options.optimizer));
      if (stages.size() > 1) {
        const double shared = sendSeconds(ctx, *stages.begin(), *stages.rbegin(), state.weight);
        stage.gradientSyncSeconds += shared;
        stage.exposedGradientSyncSeconds += shared;
      }
      if (!options.optimizerParallel.groupUpdate || placement.optimizerShards == 1) continue;
      if (!options.optimizerParallel.distributedOptimizer) {
        stage.parameterGatherSeconds += broadcastSeconds(ctx.cluster, placement, state.weight);
      } else if (auto status = bufferGather.add(
                     s, placement,
                     fp8Weight && options.fp8Parameters ? 1 : elementBytes(ctx.graph, tensor.id));
                 !status) {
        return status.error().in(fmt::format("parameter '{}'", tensor.name));
      }
    }
  }
  const std::vector<double> gathers = bufferGather.secondsPerStage(ctx.report.stages.size());
  for (size_t s = 0; s < gathers.size(); ++s) {
    ctx.report.stages[s].parameterGatherSeconds += gathers[s];
  }
  return {};
}

/// Activations produced on one stage and read on a later one travel point-to-point, stage by
/// stage. A slice held alike by r ranks of the stage (replicated over the tensor-parallel group)
/// is sent as r pieces, one per rank, each on its own link, and all-gathered by the receiving
/// ranks: Megatron-LM's scatter/gather of pipeline sends (Narayanan et al. 2021, Section 4.1; on
/// by default), which trades r-fold traffic on the slower inter-node links for an all-gather on
/// the fast intra-node ones. `sendBytes` counts what one rank sends.
void costStageSends(Context& ctx) {
  std::vector<double> gatherSeconds(static_cast<size_t>(ctx.options.stages), 0.0);
  for (const ir::Tensor& tensor : ctx.graph.tensors()) {
    if (tensor.producer == ir::kNoOp || tensor.consumers.empty()) continue;
    const int from = ctx.stageOf[tensor.producer];
    const int to = *stagesUsing(ctx, tensor).rbegin();
    if (from >= to) continue;
    const layout::TensorLayout& source = ctx.sources[static_cast<size_t>(tensor.id)];
    const int64_t bytes = source.sliceElements() * elementBytes(ctx.graph, tensor.id);
    // The ranks holding the same slice as the stage's first device.
    const std::vector<int> replicas = source.deviceMatrix.group(0, source.replicaAxes());
    const auto pieces = static_cast<int64_t>(replicas.size());
    const bool scatter = pieces > 1 && bytes % pieces == 0;
    double gather = 0;
    if (scatter) {
      gather =
          cluster::collectiveCost(ctx.cluster, cluster::Collective::kAllGather, replicas, bytes)
              .seconds;
    }
    for (int s = from; s < to; ++s) {
      StageCost& stage = ctx.report.stages[static_cast<size_t>(s)];
      stage.sendBytes += scatter ? bytes / pieces : bytes;
      gatherSeconds[static_cast<size_t>(s)] += gather;
      // Every stage it passes through outputs it (CodePath::pipelineKeepsOutputs).
      if (ctx.options.codePath.pipelineKeepsOutputs) stage.keptOutputBytes += bytes;
    }
  }
  if (ctx.options.codePath.pipelineKeepsOutputs && ctx.options.stages > 1) {
    for (const ir::Op& op : ctx.graph.ops()) {
      if (op.kind != ir::OpKind::kCrossEntropy) continue;
      constexpr int64_t kFp32Bytes = 4;
      ctx.report.stages[static_cast<size_t>(ctx.stageOf[op.id])].keptOutputBytes +=
          ctx.sharded[static_cast<size_t>(op.id)].inputs.front().sliceElements() * kFp32Bytes;
    }
  }
  for (int s = 0; s + 1 < ctx.options.stages; ++s) {
    StageCost& stage = ctx.report.stages[static_cast<size_t>(s)];
    stage.sendSeconds = sendSeconds(ctx, s, s + 1, stage.sendBytes);
    if (stage.sendSeconds > 0) stage.sendSeconds += gatherSeconds[static_cast<size_t>(s)];
  }
}

/// Seconds of the forward redistribution of `tensor` into `target`, from the edges costed.
double forwardEdgeSeconds(const Context& ctx, ir::TensorId tensor,
                          const layout::TensorLayout& target) {
  for (const auto& [layout, seconds] : ctx.forwardSeconds[static_cast<size_t>(tensor)]) {
    if (layout == target) return seconds;
  }
  // Every consumer's input layout was costed by costForwardEdges; this is only a safety net.
  auto redistribution =
      layout::redistribute(ctx.sources[static_cast<size_t>(tensor)], target, ctx.cluster,
                           elementBytes(ctx.graph, tensor), ctx.options.redistribution);
  return redistribution ? redistribution->seconds : 0.0;
}

void costActivations(Context& ctx) {
  const RecomputeRegions regions = recomputeRegions(ctx.graph, ctx.options.recompute);
  ActivationInputs inputs{
      ctx.graph,
      ctx.sharded,
      ctx.options.recompute,
      regions,
      ctx.sources,
      ctx.stageOf,
      ctx.options.stages,
      [&](ir::TensorId t, const layout::TensorLayout& to) {
        return forwardEdgeSeconds(ctx, t, to);
      },
      [&](ir::TensorId t, const layout::TensorLayout& from, const layout::TensorLayout& to) {
        auto moved = ctx.redistributions.plan(from, to, elementBytes(ctx.graph, t));
        return moved ? moved->seconds : 0.0;
      },
      ctx.options.codePath.stashGatheredInputs,
      ctx.inFusedKernel};
  const ActivationCost kept = keptActivations(inputs);
  ctx.report.recomputeRegionOf = regions.regionOf;
  for (size_t s = 0; s < ctx.report.stages.size(); ++s) {
    StageCost& stage = ctx.report.stages[s];
    stage.memory.activationBytes = kept.bytes[s];
    stage.memory.communicationBytes += kept.gatheredParameters[s];
    stage.recomputeSeconds += kept.replaySeconds[s];
    stage.parameterReplaySeconds += kept.parameterReplaySeconds[s];
  }
  for (const ir::Op& op : ctx.graph.ops()) {
    if (regions.regionOf[static_cast<size_t>(op.id)] < 0) continue;
    if (regions.keepsOutput[static_cast<size_t>(op.id)]) continue;  // not run again
    const OpCost& cost = ctx.report.ops[op.id];
    StageCost& stage = ctx.stage(op.id);
    stage.recomputeSeconds += cost.forwardSeconds;
    stage.recomputeComputeSeconds += cost.forwardSeconds;
    if (ctx.options.recompute.mpCommRecompute) stage.recomputeSeconds += cost.internalCommSeconds;
  }
  const std::vector<int64_t> workspace = backwardWorkspace(
      inputs, ctx.options.codePath.inPlaceLossGradient, ctx.options.codePath.ringMergesInFp32);
  for (size_t s = 0; s < ctx.report.stages.size(); ++s) {
    ctx.report.stages[s].memory.workspaceBytes = workspace[s];
  }
}

/// Transient collective buffers reuse one slot per stage: the largest step's. A gradient sync
/// run in place in the gradient buffer (CodePath::gradientSyncInPlace) needs none.
void costCommunicationBuffers(Context& ctx) {
  std::vector<int64_t> largest(ctx.report.stages.size(), 0);
  for (const auto& edge : ctx.report.redistributions) {
    if (edge.isGradientSync && ctx.options.codePath.gradientSyncInPlace) continue;
    int64_t& slot = largest[static_cast<size_t>(ctx.stageOf[edge.consumer])];
    for (const auto& step : edge.redistribution.steps) slot = std::max(slot, step.bytesPerDevice);
  }
  for (size_t s = 0; s < largest.size(); ++s) {
    ctx.report.stages[s].memory.communicationBytes += largest[s];
    ctx.report.stages[s].memory.communicationSlotBytes = largest[s];
  }
}

/// The seconds optimizer parallel adds: its all-gathers and its gradient reduce-scatters.
void costOptimizerParallelCollectives(Context& ctx) {
  for (const ParameterCollective& collective : ctx.parameterCollectives) {
    for (const layout::RedistStep& step : collective.redistribution.steps) {
      if (step.kind == layout::PrimitiveKind::kAllGather ||
          step.kind == layout::PrimitiveKind::kReduceScatter) {
        ctx.report.stages[static_cast<size_t>(collective.stage)].optimizerParallelCommSeconds +=
            step.seconds;
      }
    }
  }
}

void fuseParameterCollectives(Context& ctx) {
  costOptimizerParallelCollectives(ctx);
  FusionResult fused = fuseCollectives(ctx.parameterCollectives, ctx.options.fusion,
                                       ctx.stageBackwardSeconds, ctx.cluster);
  const bool perMicroBatch = ctx.options.optimizerParallel.enabled &&
                             ctx.options.optimizerParallel.gradientAccumulationShard;
  const CodePath& code = ctx.options.codePath;
  for (size_t s = 0; s < ctx.report.stages.size(); ++s) {
    StageCost& stage = ctx.report.stages[s];
    // The backward gathers a parameter again (ZeRO 3, optimizer parallel under recompute) in the
    // same fused buffers as the forward: FSDP all-gathers a unit's flat parameter in one
    // collective, not each parameter in its own. DeepSpeed's ZeRO-3 of 2021 gathers each
    // parameter with its own list collective (CodePath::listCollectives).
    const double fusion = code.listCollectives ? 1.0 : fused.gatherFusionRatio[s];
    const double replay = stage.parameterReplaySeconds * fusion;
    stage.forwardCommSeconds += fused.gatherSeconds[s];
    stage.recomputeSeconds += replay - stage.parameterReplaySeconds;
    stage.parameterReplaySeconds = replay;
    if (perMicroBatch) {
      // Sharded accumulation reduce-scatters every micro-batch's gradients as they are made.
      stage.backwardCommSeconds += fused.gradientSyncSeconds[s];
    } else {
      stage.gradientSyncSeconds += fused.gradientSyncSeconds[s];
      stage.exposedGradientSyncSeconds += fused.exposedGradientSyncSeconds[s];
    }
  }
  ctx.report.fusionGroups = std::move(fused.groups);
}

/// EvaluateOptions::copies: a micro-batch's copies each run the graph's passes and keep their
/// activations; called before the parameter collectives, which run once, are added.
void repeatForCopies(StageCost& stage, int64_t copies) {
  if (copies <= 1) return;
  const auto n = static_cast<double>(copies);
  for (double* seconds :
       {&stage.forwardComputeSeconds, &stage.backwardComputeSeconds, &stage.forwardCommSeconds,
        &stage.backwardCommSeconds, &stage.forwardExchangeSeconds, &stage.backwardExchangeSeconds,
        &stage.forwardRingSeconds, &stage.backwardRingSeconds, &stage.forwardAllReduceSeconds,
        &stage.backwardAllReduceSeconds, &stage.forwardAttentionSeconds,
        &stage.backwardAttentionSeconds, &stage.recomputeSeconds, &stage.recomputeComputeSeconds,
        &stage.parameterReplaySeconds, &stage.hostTransferSeconds, &stage.sendSeconds}) {
    *seconds *= n;
  }
  stage.memory.activationBytes *= copies;
  stage.keptOutputBytes *= copies;
  stage.sendBytes *= copies;
}

void summarise(Context& ctx) {
  StepTime& time = ctx.report.time;
  int64_t peak = -1;
  for (StageCost& stage : ctx.report.stages) {
    stage.forwardSeconds =
        stage.forwardComputeSeconds + stage.forwardCommSeconds + stage.hostTransferSeconds / 2;
    stage.backwardSeconds = stage.backwardComputeSeconds + stage.backwardCommSeconds +
                            stage.recomputeSeconds + stage.hostTransferSeconds / 2;
    time.computeSeconds += stage.forwardComputeSeconds + stage.backwardComputeSeconds;
    time.communicationSeconds += stage.forwardCommSeconds + stage.backwardCommSeconds +
                                 stage.recomputeSeconds + stage.hostTransferSeconds +
                                 stage.sendSeconds;
    stage.exposedParameterGatherSeconds =
        ctx.options.codePath.overlapParamGather
            ? std::max(0.0, stage.parameterGatherSeconds - stage.forwardSeconds)
            : stage.parameterGatherSeconds;
    time.gradientSyncSeconds = std::max(time.gradientSyncSeconds, stage.exposedGradientSyncSeconds);
    time.optimizerSeconds = std::max(time.optimizerSeconds, stage.optimizerSeconds);
    if (stage.memory.total() > peak) {
      peak = stage.memory.total();
      ctx.report.memory = stage.memory;
    }
  }
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
  if (!options.costModel) return Error{"evaluateGraph: no cost model"};
  Context ctx{graph,
              sharded,
              cluster,
              options,
              deviceModel(cluster.device, *options.costModel),
              {},
              {},
              {},
              {},
              {},
              {},
              {},
              {},
              layout::RedistributionCache{cluster, options.redistribution}};
  ctx.stageOf = options.stageOfOp;
  if (ctx.stageOf.empty()) ctx.stageOf.assign(graph.ops().size(), 0);
  if (ctx.stageOf.size() != graph.ops().size()) {
    return Error{fmt::format("evaluateGraph: {} stage entries for {} ops", ctx.stageOf.size(),
                             graph.ops().size())};
  }
  if (auto status = checkManualSplits(graph, sharded); !status) return status.error();
  ctx.report.stages.resize(static_cast<size_t>(std::max(options.stages, 1)));
  ctx.report.parameters = placeParameters(graph, sharded, options.optimizerParallel);
  placeSources(ctx);
  costOps(ctx);
  if (auto status = costForwardEdges(ctx); !status) return status.error();
  if (auto status = costBackwardEdges(ctx); !status) return status.error();
  if (auto status = costParameters(ctx); !status) return status.error();
  costStageSends(ctx);
  costActivations(ctx);
  costCommunicationBuffers(ctx);
  for (StageCost& stage : ctx.report.stages) {
    repeatForCopies(stage, options.copies);
    hideActivationComm(stage, options);
  }
  fuseParameterCollectives(ctx);
  summarise(ctx);
  const auto numDevices = sharded.front().matrix.numDevices();
  ctx.report.memoryBytesByDevice.assign(static_cast<size_t>(numDevices), ctx.report.memory.total());
  return std::move(ctx.report);
}

}  // namespace autopar::cost
