#pragma once
/// \file
/// Cost of one training step of a sharded graph (every op given a ShardedOp) on a cluster, without
/// pipelining: forward and backward compute per op, the redistributions on every edge in both
/// directions, gradient synchronisation of parameters, the optimizer step, and per-device memory.
///
/// Storage layouts: a parameter or graph input is stored as its first consumer needs it; other
/// consumers get a redistribution. Forward edges go from the producer's output layout (partial
/// sums included) to the consumer's input layout. Backward, each consumer hands back the gradient
/// in its input layout, partial over ShardedOp::inputGradPartialAxes; consumers handing back
/// identical layouts are summed locally first, so column-parallel Q, K and V cost one all-reduce.
/// The summed gradient is redistributed to the producer's output layout without partial sums; for
/// a parameter, to its storage layout (this is data parallelism's gradient all-reduce).
///
/// Plan features (cost/training.h): parameters are stored per cost/parameters.h (optimizer
/// parallel), activations kept per cost/activations.h (recompute), parameter collectives fused per
/// cost/fusion.h. With pipeline stages, every op belongs to a stage; costs are split by stage and
/// tensors crossing stages are sent point-to-point on the link joining the stages' devices.
/// Ops placed on the host compute at the host's speed and move their activations over PCIe.

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/framework.h"
#include "cost/fusion.h"
#include "cost/memory.h"
#include "cost/op_cost.h"
#include "cost/parameters.h"
#include "cost/training.h"
#include "ir/graph.h"
#include "layout/redistribution.h"
#include "rules/sharded_op.h"
#include "util/expected.h"

namespace autopar::cost {

struct EvaluateOptions {
  /// The constants every op and memory pass is priced with (cost/constants.h).
  CostModel costModel = shippedCostModel();
  OptimizerSpec optimizer;
  layout::RedistributionOptions redistribution;
  OptimizerParallelOptions optimizerParallel;
  RecomputeOptions recompute;
  FusionOptions fusion;
  /// Pipeline: the stage of every op, by OpId (empty: all in stage 0), and the stage count.
  std::vector<int> stageOfOp;
  int stages = 1;
  /// Stages hold devices [s * rankStride, (s + 1) * rankStride); virtual stage k of an
  /// interleaved schedule runs on stage k % physicalStages. The sharded ops' ranks are stage 0's.
  int rankStride = 0;
  int physicalStages = 1;
  /// What the framework's code runs (cost/framework.h: which kernels, which overlaps), each switch
  /// declared once in codePathSwitches(). The passes read it as they price: the optimizer
  /// step's parameter all-gather (overlapParamGather: only what outlasts one micro-batch's
  /// forward is exposed), the activation collectives (tpCommOverlap, asyncTpAllreduce,
  /// overlapExpertComm), the elementwise chains (fusedElementwise), the gradient accumulation
  /// (gradientAccumulationFusion), the loss's and the ring attention's buffers, the stashed
  /// gathers, the pipeline's kept outputs and the gradient sync's buffers.
  CodePath codePath;
  /// The graph is one of `copies` interleaved copies of each micro-batch (MindSpore's
  /// micro_batch_interleave_num; the model code runs every copy's forward, then the backward):
  /// their compute, activation communication, recompute and kept activations add up; the
  /// parameter collectives, the model states and the backward workspace do not.
  int64_t copies = 1;
  /// Bytes per element an fp8 GEMM's weight keeps beside itself for the whole step: Transformer
  /// Engine caches the weight cast to fp8 and its transpose across a step's micro-batches (its
  /// is_first_microbatch cache, which Megatron-Core turns on): 2. Zero where each GEMM casts its
  /// weight anew (torchao's float8 linears) or where the weight is itself stored in fp8 with its
  /// transpose (fp8 parameters: 1 + 1 bytes, as much as the bf16 weight counted).
  int fp8WeightCacheBytes = 0;
  /// The weights of fp8 GEMMs are stored in fp8 (Megatron-Core's --fp8-param-gather, NeMo's
  /// fp8_params): the distributed optimizer's parameter all-gather moves 1 byte an element.
  bool fp8Parameters = false;

  /// A stage's activation communication runs in chunks under the matmuls it feeds or follows,
  /// and only what outlasts the stage's compute in each pass is exposed: Megatron-Core's
  /// --tp-comm-overlap (its all-gathers and reduce-scatters; StageCost::forwardAllReduceSeconds),
  /// or MindSpore's micro_batch_interleave_num, whose copies hide one another's communication.
  [[nodiscard]] bool hidesActivationComm() const { return codePath.tpCommOverlap || copies > 1; }
};

enum class EdgeDirection { kForward, kBackward };

/// A redistribution inserted on the graph.
struct EdgeRedistribution {
  ir::TensorId tensor = -1;
  ir::OpId producer = ir::kNoOp;  ///< kNoOp for parameters and inputs (their storage layout)
  ir::OpId consumer = ir::kNoOp;  ///< forward: the consumer; backward: first consumer of the group
  EdgeDirection direction = EdgeDirection::kForward;
  bool isGradientSync = false;  ///< backward into a parameter's storage layout
  layout::Redistribution redistribution;
};

struct StepTime {
  double computeSeconds = 0;
  double communicationSeconds = 0;  ///< activation redistributions and internal collectives
  double gradientSyncSeconds = 0;   ///< parameter gradient reductions (not overlapped here)
  double optimizerSeconds = 0;
  [[nodiscard]] double totalSeconds() const {
    return computeSeconds + communicationSeconds + gradientSyncSeconds + optimizerSeconds;
  }
};

/// One pipeline stage's costs (the whole graph when there is one stage).
struct StageCost {
  /// One micro-batch, compute and activation communication; backward includes recompute.
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  double forwardComputeSeconds = 0;
  double backwardComputeSeconds = 0;
  double recomputeSeconds = 0;         ///< forward computed again and gathers redone, in backward
  double recomputeComputeSeconds = 0;  ///< the compute part of recomputeSeconds
  double parameterReplaySeconds = 0;   ///< the optimizer-parallel gathers of recomputeSeconds
  double forwardCommSeconds = 0;
  double backwardCommSeconds = 0;
  /// The part of forwardCommSeconds and backwardCommSeconds that carries mixture-of-experts
  /// tokens to their experts and back (CodePath::overlapExpertComm).
  double forwardExchangeSeconds = 0;
  double backwardExchangeSeconds = 0;
  /// The part of forwardCommSeconds and backwardCommSeconds that brings keys and values to the
  /// attention under context parallelism (CodePath::overlapRingExchange), and the attention's
  /// own compute, which a ring hides it under.
  double forwardRingSeconds = 0;
  double backwardRingSeconds = 0;
  /// The part of forwardCommSeconds and backwardCommSeconds spent in all-reduces (tensor
  /// parallelism without sequence parallelism): Transformer Engine's userbuffers overlap an
  /// all-gather or reduce-scatter with its GEMM, not an all-reduce (--tp-comm-overlap).
  double forwardAllReduceSeconds = 0;
  double backwardAllReduceSeconds = 0;
  double forwardAttentionSeconds = 0;
  double backwardAttentionSeconds = 0;
  double hostTransferSeconds = 0;  ///< host<->device copies of host-placed ops, fwd + bwd
  /// One micro-batch's activations sent to the next stage, and the time on the link between.
  int64_t sendBytes = 0;
  double sendSeconds = 0;
  /// One micro-batch's output of this virtual stage that the pipeline runtime keeps until the
  /// step ends (CodePath::pipelineKeepsOutputs); 0 otherwise.
  int64_t keptOutputBytes = 0;
  /// Once per step.
  double gradientSyncSeconds = 0;
  double exposedGradientSyncSeconds = 0;
  double optimizerSeconds = 0;
  /// Group update: the updated parameters broadcast or all-gathered after the optimizer step,
  /// and what of it the step exposes (CodePath::overlapParamGather).
  double parameterGatherSeconds = 0;
  double exposedParameterGatherSeconds = 0;
  /// activationBytes holds one micro-batch; the schedule decides how many are in flight.
  MemoryBreakdown memory;
  /// Optimizer parallel: parameter-state bytes saved against whole parameters, and the seconds
  /// of its all-gathers (one micro-batch) and gradient reduce-scatters (one step).
  int64_t optimizerParallelSavedBytes = 0;
  double optimizerParallelCommSeconds = 0;
};

struct CostReport {
  std::vector<OpCost> ops;  ///< indexed by OpId
  std::vector<EdgeRedistribution> redistributions;
  std::vector<ParameterPlacement> parameters;
  std::vector<FusionGroup> fusionGroups;  ///< empty without fusion
  std::vector<StageCost> stages;
  std::vector<int> recomputeRegionOf;  ///< per op: its recompute region, or -1
  /// The whole step for one micro-batch without pipelining (every stage summed).
  StepTime time;
  MemoryBreakdown memory;                    ///< of the most loaded stage, one micro-batch
  std::vector<int64_t> memoryBytesByDevice;  ///< indexed by position in the ranks list
};

/// Evaluates `sharded` (one ShardedOp per op of `graph`, indexed by OpId, all over the same ranks).
Expected<CostReport> evaluateGraph(const ir::Graph& graph,
                                   const std::vector<rules::ShardedOp>& sharded,
                                   const cluster::Cluster& cluster,
                                   const EvaluateOptions& options = {});

}  // namespace autopar::cost
