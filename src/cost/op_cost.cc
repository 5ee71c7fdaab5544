#include "cost/op_cost.h"

#include <fmt/format.h>

#include <algorithm>

#include "cluster/collective.h"
#include "cost/compute.h"
#include "cost/constants.h"
#include "rules/sharded_op.h"

namespace autopar::cost {

namespace {

double internalCommSeconds(const cluster::Cluster& cluster, const rules::ShardedOp& shard) {
  double seconds = 0;
  for (const rules::ShardedOp::InternalReduce& reduce : shard.internalReduces) {
    const std::vector<int> axes{reduce.axis};
    // Statistics travel in fp32.
    seconds += cluster::collectiveCost(cluster, cluster::Collective::kAllReduce,
                                       shard.matrix.group(0, axes), reduce.elements * 4)
                   .seconds;
  }
  return seconds;
}

/// The small kernels a mixture-of-experts op runs besides its main one, and the backward traffic
/// they add, as Megatron-Core's alltoall token dispatcher (core_r0.9, NeMo 24.09) runs them with
/// its default SequentialMLP experts (megatron/core/transformer/moe/router.py, moe_utils.py,
/// token_dispatcher.py, experts.py):
/// - Dispatch is the router's top-k and softmax in fp32, the capacity top-k and its masks, the
///   load-balancing loss (a second softmax, sums, a scale, an all-reduce of the token counts),
///   the tokens-per-expert count and the permutation's index_select: about 28 kernels forward
///   and 24 backward.
/// - Combine is the unpermutation (probabilities times the expert outputs, a zeroed buffer, a
///   scatter_add) and, per local expert, SequentialMLP's slice of the token buffer and the copy of
///   its output back: 4 + 2 L kernels forward, 6 + 6 L backward for L local experts. Each
///   expert's slice-assignment clones, and each slice zero-fills, the whole buffer in backward:
///   3 L passes over the experts' token buffer.
/// Each is a few hundred kilobytes: it costs a queued kernel's device time (the host issued it
/// while the experts' GEMMs ran).
struct ExtraKernels {
  double forward = 0;
  double backward = 0;
  double backwardBytes = 0;
};

ExtraKernels extraKernels(const ir::Graph& graph, const ir::Op& op, const rules::ShardedOp& shard) {
  if (op.kind == ir::OpKind::kMoEDispatch) return {27, 23, 0};
  if (op.kind != ir::OpKind::kMoECombine) return {};
  // The slots [b, E, c, h] arrive with the experts split over the expert-parallel ranks.
  const layout::TensorLayout& slots = shard.inputs[0];
  const auto localExperts = static_cast<double>(slots.sliceShape()[1]);
  const auto bufferBytes =
      static_cast<double>(slots.sliceElements()) *
      static_cast<double>(ir::dtypeBytes(graph.tensor(op.inputs[0]).type.dtype));
  return {3 + 2 * localExperts, 5 + 6 * localExperts, 3 * localExperts * bufferBytes};
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

// Per element of the local attention output (E = local tokens x local heads x head dim), counted
// from the code; torchtitan's Llama repeats the K/V heads to the query heads before the attention
// (repeat_kv), so K and V hold E elements each too. Half the ring steps after the first are
// "partial" on average over the ranks (load balancing: a rank's later steps use half its
// queries), and update half the running tensors after cloning them whole.
//   forward:  K and V made contiguous (2 + 2 bytes each) and concatenated for the exchange at
//             every step but the last (2 + 2 each); each step's output converted to fp32 (2 + 4);
//             from the second step, the merge out - sigmoid(lse_i - lse) * (out - out_i) in fp32
//             (three passes: 12 + 8 + 8 bytes) on the whole output (34 with the conversion) or,
//             partial, on half of it plus the clone and copy back (17 + 8 + 4 = 29); the result
//             converted back to bf16 (4 + 2). 20 + 39.5 (cp - 1) bytes an element.
//   backward: the fp32 gradient buffers zeroed (3 x 4) and K and V made contiguous (8); at each
//             step the K and V gradients added into their fp32 accumulators (4 + 2 + 4 each),
//             after cloning them whole on half the later steps (8 + 5 each), and concatenated in
//             fp32 for the ring (2 x 8); the query gradient added likewise (10, or 8 + 5); K and
//             V concatenated for the exchange at every step but the last (8); at the end the
//             three gradients converted to bf16 (3 x 6). 84 + 58.5 (cp - 1) bytes an element.
//   backward workspace, at a later ring step: every rank's K and V gathered (4 cp bytes an
//             element of the local output), the fp32 query gradient (4), the received fp32 K/V
//             gradients (8), a partial step's clone of one of them (4), the concatenation being
//             sent and the one still in flight (2 x 8), the step's bf16 gradients (6) and
//             FlashAttention-2's fp32 query-gradient accumulator (4): 4 cp + 42.
RingMergeBytes ringMergeBytes(const ir::Op& op, const rules::ShardedOp& shard) {
  if (op.kind != ir::OpKind::kFlashAttention || shard.inputs.size() < 2) return {};
  // The ring's length: how many ways the queries' sequence is cut while the keys are whole.
  const layout::TensorLayout& queries = shard.inputs[0];
  const layout::TensorLayout& keys = shard.inputs[1];
  if (queries.shape.size() < 2 || keys.shape.size() < 2) return {};
  const int64_t localQueries = queries.sliceShape()[1];
  if (localQueries <= 0 || keys.sliceShape()[1] != keys.shape[1]) return {};
  const double cp = static_cast<double>(queries.shape[1]) / static_cast<double>(localQueries);
  if (cp <= 1) return {};
  const auto elements = static_cast<double>(shard.outputs.front().sliceElements());
  return {elements * (20 + 39.5 * (cp - 1)), elements * (84 + 58.5 * (cp - 1)),
          elements * (4 * cp + 42)};
}

// torchtitan's apply_rotary_emb (torchtitan/models/llama/model.py) upcasts the query or key to
// fp32 (reading each element, writing 4 bytes), multiplies it as complex pairs by the rotation
// (4 + 4), and casts the product back (4 + the element's bytes); its backward runs the same three
// kernels on the gradient. One fused kernel (torch.compile's, Transformer Engine's fused RoPE,
// Megatron-Core's apply_rope_fusion) reads and writes each element once, which the op's own
// bytes count: the eager path adds 16 bytes an element each way. Measured on an H100, the eager
// forward took 0.145 ms on 16.8 M elements (bench/gpu_kernels.py, BENCHMARKS.md).
double eagerRotaryBytes(const ir::Graph& graph, const ir::Op& op, const rules::ShardedOp& shard) {
  if (op.kind != ir::OpKind::kRotary || shard.outputs.empty()) return 0;
  const ir::DType dtype = graph.tensor(op.outputs.front()).type.dtype;
  if (dtype == ir::DType::kF32) return 0;
  constexpr double kFp32PassBytes = 16;
  return kFp32PassBytes * static_cast<double>(shard.outputs.front().sliceElements());
}

// torchtitan's RMSNorm before torch 2.9 (torchtitan/models/norms.py at 9dec370:
// `self._norm(x.float()).type_as(x) * self.weight`, _norm being `x * torch.rsqrt(x.pow(2).mean(-1,
// keepdim=True) + eps)`) and Hugging Face's LlamaRMSNorm run the same kernels. Per element of a
// bf16 input, each kernel's reads and writes: forward, the upcast (2 + 4), the square (4 + 4),
// the mean (4), the normalising multiply (4 + 4), the downcast (4 + 2) and the weight's multiply
// (2 + 2): 36 bytes. Autograd's backward: the weight's multiply (its input gradient 2 + 2, its
// weight gradient's product and sum 2 + 2 + 2 + 2), the downcast's (2 + 4), the normalising
// multiply's (4 + 4, and the rsqrt's gradient as a product and sum, 4 + 4 + 4 + 4), the mean's
// expanded gradient (4), the square's (pow_backward: 4 + 4, 4 + 4, 4 + 4 + 4), the two gradients
// of the fp32 input added (4 + 4 + 4) and the upcast's (4 + 2): 92 bytes. One fused kernel reads
// the input and writes the output (4 bytes), and its backward reads the input and the gradient
// and writes the input's gradient (6; ir/ops/norm.cc prices both): the eager path adds 32
// forward and 86 backward.
EagerNormBytes eagerNormBytes(const ir::Graph& graph, const ir::Op& op,
                              const rules::ShardedOp& shard) {
  if (op.kind != ir::OpKind::kRMSNorm || shard.outputs.empty()) return {};
  if (ir::dtypeBytes(graph.tensor(op.inputs.front()).type.dtype) != 2) return {};
  constexpr double kForwardBytes = 36 - 4;
  constexpr double kBackwardBytes = 92 - 6;
  const auto elements = static_cast<double>(shard.outputs.front().sliceElements());
  return {kForwardBytes * elements, kBackwardBytes * elements};
}

OpCost costOfOp(const ir::Graph& graph, const ir::Op& op, const rules::ShardedOp& shard,
                const cluster::Cluster& cluster, const CostConstants& deviceConstants,
                double fusedBytes, bool ownKernel) {
  const DeviceModel device{cluster.device, deviceConstants};
  const double share = localIoShare(graph, op, shard);
  const double unfusedBytes = static_cast<double>(graph.forwardBytes(op)) * share;
  const double forwardBytes = std::max(unfusedBytes - fusedBytes, 0.0);
  const double keptShare = unfusedBytes > 0 ? forwardBytes / unfusedBytes : 1.0;
  const ir::BackwardRule backward = graph.backwardRule(op);
  OpCost cost;
  cost.forwardFlops = graph.forwardFlops(op) * shard.computeFraction;
  cost.backwardFlops = backward.flops * shard.computeFraction;
  const std::optional<rules::LocalGemm>& gemm = shard.gemm;
  cost.forwardSeconds = rooflineSeconds(graph, op, cost.forwardFlops, forwardBytes, gemm, device);
  // Backward reads the saved tensors and the output gradient and writes the input gradients: the
  // traffic the op's family gives, else about twice the forward traffic.
  const double backwardBytes = backward.bytes >= 0
                                   ? static_cast<double>(backward.bytes) * share * keptShare
                                   : 2 * forwardBytes;
  cost.backwardSeconds =
      rooflineSeconds(graph, op, cost.backwardFlops, backwardBytes, gemm, device);
  // Every kernel takes at least a launch's time: the op's forward kernel, and backward one per
  // input it propagates a gradient to (a GEMM's data- and weight-gradient GEMMs). An op fused
  // into the kernel before it pays none.
  const double launch = ownKernel ? deviceConstants.kernelLaunchSeconds : 0.0;
  const auto gradientKernels = static_cast<double>(std::clamp<size_t>(op.inputs.size(), 1, 3));
  cost.forwardSeconds = std::max(cost.forwardSeconds, launch);
  cost.backwardSeconds = std::max(cost.backwardSeconds, launch * gradientKernels);
  const ExtraKernels extra = extraKernels(graph, op, shard);
  cost.forwardSeconds += extra.forward * deviceConstants.queuedKernelSeconds;
  cost.backwardSeconds += extra.backward * deviceConstants.queuedKernelSeconds +
                          memorySeconds(device, extra.backwardBytes);
  if (op.attrs.fp8) {
    // Transformer Engine casts each GEMM operand to fp8 with a kernel of its own (cast and
    // transpose, the amax fused in): the input activation forward, the output gradient backward,
    // each read in bf16 and written twice in fp8 (row- and column-major), 4 bytes an element.
    // The weights' fp8 copies are cast once per step and cached across micro-batches
    // (is_first_microbatch), so they are not counted per micro-batch.
    constexpr double kCastBytesPerElement = 4;
    auto castSeconds = [&](const layout::TensorLayout& operand) {
      const double bytes = kCastBytesPerElement * static_cast<double>(operand.sliceElements());
      return std::max(launch, memorySeconds(device, bytes));
    };
    cost.forwardSeconds += castSeconds(shard.inputs[0]);
    cost.backwardSeconds += castSeconds(shard.outputs[0]);
  }
  cost.internalCommSeconds = internalCommSeconds(cluster, shard);
  return cost;
}

}  // namespace autopar::cost
