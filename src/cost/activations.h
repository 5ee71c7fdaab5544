#pragma once
/// \file
/// Activations kept from forward to backward, per pipeline stage and micro-batch, under seed
/// 001's recompute.
///
/// Recompute regions. An op is recomputed when it is in a recomputed block (Cell.recompute(), or
/// every layer of a stack under full recompute), is an attention core under selective recompute,
/// or carries its own recompute flag. Each block, each attention core and each connected set of
/// flagged ops forms one region. A recomputed op keeps none of its saved tensors; its region keeps
/// the inputs that come from outside it. A block or attention-core region hands its outputs on as
/// usual (PyTorch's checkpoint, Megatron-LM's recompute, MindSpore's Cell recompute), so an output
/// a later op saves is kept; an op-flagged op's output is not kept but computed again.
///
/// Stashing. An activation a consumer saves after a gathering redistribution (all-gather; e.g.
/// the sequence-parallel input of a column-parallel MatMul) is kept as its smaller source slice
/// and gathered again in backward, as Megatron-LM does under sequence parallelism (PyTorch's
/// DTensor keeps the gathered tensor: ActivationInputs::stashGatheredInputs). Inside a
/// recomputed region, communication between its ops is replayed with the recompute; with
/// mp_comm_recompute false its output is kept instead, and so is a gathered region input. An
/// optimizer-parallel parameter's gathered copy is kept from forward to backward (a communication
/// buffer), unless its consumer is recomputed with parallel_optimizer_comm_recompute on.
///
/// Fused chains. Under elementwise fusion an activation that keeps its input (SiLU, GeLU) and
/// the elementwise op that alone reads its output run as one kernel, whose backward makes the
/// activation's output again from that input. The consumer then keeps only its other inputs:
/// SwiGLU keeps the gate and the up projection, not silu(gate) as well, as Megatron-Core's fused
/// bias_swiglu_impl (megatron/core/fusions/fused_bias_swiglu.py saves only its input) and
/// TorchInductor's recomputing partitioner do. PyTorch eager keeps all three.

#include <cstdint>
#include <functional>
#include <vector>

#include "cost/training.h"
#include "ir/graph.h"
#include "layout/tensor_layout.h"
#include "rules/sharded_op.h"

namespace autopar::cost {

struct RecomputeRegions {
  std::vector<int> regionOf;      ///< per op: region index, or -1 when not recomputed
  std::vector<bool> dropsOutput;  ///< per op: op-level recompute, its output is not kept
  /// per op: in a region, but its output is kept and it is not run again (the per-op policy,
  /// RecomputeOptions::selectiveOpPolicy)
  std::vector<bool> keepsOutput;
  int count = 0;
};

RecomputeRegions recomputeRegions(const ir::Graph& graph, const RecomputeOptions& options);

struct ActivationInputs {
  const ir::Graph& graph;
  const std::vector<rules::ShardedOp>& sharded;
  const RecomputeOptions& options;
  const RecomputeRegions& regions;
  /// Where each tensor lives before its consumers read it (storage layout for parameters).
  const std::vector<layout::TensorLayout>& sources;
  const std::vector<int>& stageOf;  ///< per op
  int stages = 1;
  /// Seconds of the forward redistribution of a tensor into a consumer's layout.
  std::function<double(ir::TensorId, const layout::TensorLayout&)> forwardSeconds;
  /// Seconds of redistributing a tensor from one layout to another (the gather of a kept slice).
  std::function<double(ir::TensorId, const layout::TensorLayout&, const layout::TensorLayout&)>
      redistributionSeconds;
  bool stashGatheredInputs = true;  ///< CodePath::stashGatheredInputs
  /// Per tensor: read by its one consumer inside its producer's kernel (CodePath::
  /// fusedElementwise, as the op costs fuse it); empty when nothing is fused. A fused kernel's
  /// backward makes an activation's output again from the input the activation keeps, so the
  /// consumer does not keep it (see "Fused chains" above).
  std::vector<bool> inFusedKernel = {};
};

struct ActivationCost {
  std::vector<int64_t> bytes;               ///< per stage, one micro-batch
  std::vector<int64_t> gatheredParameters;  ///< per stage: optimizer-parallel copies kept
  std::vector<double> replaySeconds;        ///< per stage, one micro-batch: gathers redone
  /// The part of replaySeconds that gathers optimizer-parallel parameters again.
  std::vector<double> parameterReplaySeconds;
};

ActivationCost keptActivations(const ActivationInputs& inputs);

/// The backward's working set beyond what is kept, per stage: the largest of the cross entropy's
/// gradient buffers (`inPlaceLossGradient`: the gradient cast to the logits' dtype; otherwise
/// PyTorch's, two fp32 buffers the size of the logits, three under loss_parallel when the
/// vocabulary is sharded) and each recomputed region's activations, made again by
/// the recompute and held until the region's backward has used them (PyTorch's checkpoint,
/// Megatron's recompute). Ops whose output the per-op policy keeps are not made again.
std::vector<int64_t> backwardWorkspace(const ActivationInputs& inputs, bool inPlaceLossGradient,
                                       bool ringMergesInFp32 = false);

}  // namespace autopar::cost
