#pragma once
/// \file
/// One training setup: what a run of the model does beyond its architecture, as the CLI, a run
/// yaml or a Python caller gives it and every later step reads it. The parallel configuration
/// (ir::ParallelConfig), the batch and sequence, the precision, the framework and its code path
/// (which kernels run and which communications overlap), how Adam holds its state, the per-block
/// placement and recompute, and the memory kept free. The Plan carries it and the exporters
/// write it; cost/framework.h declares each code-path switch's flag, doc and per-framework
/// default (cost::frameworkProfile(framework).codePath).
///   TP 8 PP 4 DP 2 with ZeRO 1, a global batch of 512 at sequence 4096, bf16, under Megatron-Core
///   with its overlaps: setup.tp = 8, .pp = 4, .dp = 2, .zero = 1, .gbs = 512, .seq = 4096,
///   .framework = Framework::kMegatronCore, .codePath = frameworkProfile(kMegatronCore).codePath

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op.h"
#include "ir/parallel_config.h"

namespace autopar::ir {

enum class Framework {
  kMegatronLm2021,     ///< Megatron-LM at the SC'21 paper's commit (Narayanan et al. 2021)
  kMegatronLm,         ///< Megatron-LM 2022 (v3.0, Korthikanti et al. 2022)
  kMegatronCore,       ///< Megatron-Core, NeMo and Megatron-Bridge from 2024
  kMegatronDeepSpeed,  ///< Megatron-DeepSpeed with DeepSpeed's ZeRO (2021-22)
  kPytorchFsdp,        ///< PyTorch FullyShardedDataParallel (FSDP1), data parallel only
  kTorchtitan,         ///< torchtitan: FSDP2, DTensor TP, torch.distributed.pipelining, CP
  kMindSpore,          ///< MindSpore / MindFormers auto-parallel on Ascend
  kMindSpeed,          ///< MindSpeed (Megatron-Core on Ascend)
  kComposer,           ///< MosaicML Composer with llm-foundry: FSDP1 with flash-attn's fused loss
};
inline constexpr size_t kFrameworkCount = 9;

/// The code path's switches the cost model reads. Each is a framework behaviour, not a fitted
/// constant: which kernels run and which communications overlap with compute. The defaults here
/// price a plan with its own features only (`autopar plan` without --framework, as the seeds
/// describe MindSpore's): one kernel per op, nothing overlapped; each profile's settings are
/// cost::codePathSwitches()' table (cost/framework.h).
struct CodePath {
  /// The attention kernel: FlashAttention-2 (PyTorch's scaled_dot_product_attention, Ascend's
  /// FlashAttentionScore), cuDNN's fused attention (Transformer Engine's), or the score matrix
  /// in memory (Megatron-LM's CoreAttention before 2023).
  ir::AttentionKernel attention = ir::AttentionKernel::kFlash;
  /// The loss kernel: an fp32 copy of the logits kept as the softmax, or one fused kernel over
  /// the logits in their own dtype (flash-attn's cross_entropy, llm-foundry's default).
  ir::LossKernel loss = ir::LossKernel::kFp32;
  /// The weight-gradient GEMM accumulates into the fp32 gradient buffer in place; false: a
  /// separate add kernel per micro-batch (PyTorch's AccumulateGrad, Megatron-LM before 2022).
  bool gradientAccumulationFusion = true;
  /// The backward's tensor-parallel collective overlaps the backward GEMMs.
  bool asyncTpAllreduce = false;
  /// Tensor-parallel communication overlapped with the GEMMs forward and backward
  /// (Transformer Engine's userbuffers, --tp-comm-overlap).
  bool tpCommOverlap = false;
  /// The mixture-of-experts token exchange (expert-parallel all-to-all) overlapped with another
  /// micro-batch's compute (Megatron-Core 0.14's --overlap-moe-expert-parallel-comm); false:
  /// the dispatcher waits on it.
  bool overlapExpertComm = false;
  /// Under context parallelism the key/value exchange of ring attention runs under the previous
  /// ring step's attention (Transformer Engine's AttnFuncWithCPAndKVP2P, MindSpeed's ring
  /// attention); false: it waits for the exchange.
  bool overlapRingExchange = false;
  /// Data-parallel gradients reduced in buckets while the backward runs.
  bool overlapGradReduce = false;
  /// Sharded parameters gathered while the forward runs (distributed optimizer, FSDP prefetch).
  bool overlapParamGather = false;
  /// Collectives called with per-rank tensor lists, one copy per rank (DeepSpeed's ZeRO-3, 2021).
  bool listCollectives = false;
  /// Chains of elementwise ops run as one kernel (Megatron's bias-GeLU and bias-dropout-add,
  /// Transformer Engine's, torch.compile's); false: one kernel per op, as PyTorch eager runs
  /// them, each intermediate written and read back.
  bool fusedElementwise = false;
  /// An RMSNorm runs as one kernel forward and one backward (Apex's and Transformer Engine's,
  /// torch 2.9's nn.RMSNorm, a Triton kernel); false: as the composite ops eager PyTorch runs
  /// for Hugging Face's LlamaRMSNorm and for torchtitan's before torch 2.9 (upcast, square, mean,
  /// rsqrt, two multiplies, downcast), each writing its intermediate (cost::eagerNormBytes).
  /// torch.compile fuses them whatever this says (fusedElementwise).
  bool fusedNorm = true;
  /// The cross entropy writes its gradient into the fp32 softmax it kept (Megatron's
  /// vocab-parallel cross entropy); false: PyTorch's log_softmax and nll_loss backward allocate
  /// two fp32 buffers the size of the logits .
  bool inPlaceLossGradient = true;
  /// A linear that reads a gathered activation (the sequence-parallel input of a column-parallel
  /// GEMM) keeps its sharded source for the backward and gathers it again there (Megatron-LM's
  /// LinearWithGradAccumulationAndAsyncCommunication); false: the GEMM saves the gathered input
  /// it was given (PyTorch's DTensor ColwiseParallel).
  bool stashGatheredInputs = true;
  /// Under pipeline parallelism every micro-batch's stage output is kept until the step ends
  /// (torch.distributed.pipelining).
  bool pipelineKeepsOutputs = false;
  /// Under context parallelism each ring step's attention output is merged into the running
  /// output by separate fp32 kernels, and the query and key/value gradients accumulate in fp32
  /// (PyTorch's context_parallel; cost/op_cost.h, ringMergeBytes).
  bool ringMergesInFp32 = false;
  /// ZeRO 3 keeps the root module's parameters (embedding, final norm, output projection) and
  /// the last layer's gathered through the forward and backward (RecomputeOptions::
  /// rootStaysGathered: FSDP2 as torchtitan wraps it).
  bool fsdpRootStaysGathered = false;
  /// Selective recompute is PyTorch's per-op policy (torchtitan's: keep the attention and every
  /// other matmul's output, recompute the rest of the layer); false: Megatron's, the attention
  /// core alone (RecomputeOptions::selectiveOpPolicy).
  bool selectiveOpPolicy = false;
  /// Under pipeline parallelism FSDP gathers the parameters once and keeps them, and accumulates
  /// the micro-batches' gradients unsharded in fp32, reducing them once at the last backward
  /// (torch.distributed.pipelining's stage turns resharding and gradient sync off until then):
  /// ZeRO 2 and 3 run with ZeRO 1's memory and traffic.
  bool fsdpUnshardedUnderPipeline = false;
  /// Under bf16 and fp8 the gradients accumulate and are reduced in bf16, 2 bytes each, not in
  /// fp32 (Megatron-LM's --grad-reduce-in-bf16, NeMo's optim.grad_sync_dtype: bf16, FSDP's
  /// MixedPrecisionPolicy reduce_dtype bf16): half the gradient buffer and half the data-parallel
  /// traffic. Off in every profile, as in each framework's defaults.
  bool gradReduceInBf16 = false;
  /// The data-parallel gradient sync runs in place in one contiguous gradient buffer
  /// (Megatron's DistributedDataParallel and its
  /// distributed optimizer); false: a communication buffer per sync.
  bool gradientSyncInPlace = false;
  /// Under fp8 each fp8 GEMM's weight is cached in fp8 with its transpose for the whole step
  /// (EvaluateOptions::fp8WeightCacheBytes: Transformer Engine under Megatron-Core); false:
  /// cast anew at every use (torchao's float8 linears).
  bool fp8WeightCache = false;
  /// Under --zero 1 with pipeline parallelism the data-parallel gradients are all-reduced whole
  /// after the last backward, each rank updates its slice of the states, and the updated 16-bit
  /// parameters are all-gathered (DeepSpeed's pipeline engine, deepspeed/runtime/pipe/engine.py
  /// _exec_reduce_grads); false: reduce-scattered to the slices (Megatron's distributed
  /// optimizer).
  bool pipelineAllReducesZero1 = false;
  /// Under bf16 with --zero 0, or --zero 1 under a pipeline, DeepSpeed's BF16_Optimizer runs
  /// (TrainingSetup::bf16OptimizerRuns): the optimizer states sharded over data parallelism (its
  /// own ZeRO 1), an fp32 gradient buffer of every parameter beside autograd's bf16 gradients,
  /// which stay allocated, each micro-batch's cast and added in, and the buffer all-reduced in
  /// bf16. Otherwise DeepSpeed's ZeRO optimizers keep and reduce bf16 gradients in bf16.
  bool bf16Optimizer = false;
  auto operator<=>(const CodePath&) const = default;
};

/// How Adam holds its state for a 16-bit weight.
enum class OptimizerState {
  /// An fp32 master copy and fp32 moments: 12 bytes (Megatron's distributed optimizer, PyTorch's
  /// AdamW under mixed precision).
  kFp32,
  /// fp32 moments, and the master copy as the 16 bits a bf16 weight lacks of its fp32 value: 10
  /// bytes (Apex's DistributedFusedAdam with store_param_remainders, which NeMo's
  /// distributed_fused_adam sets under bf16).
  kRemainders,
  /// bf16 moments and no master copy, the weight updated in place: 4 bytes (NeMo's
  /// distributed_fused_adam with optim.dtype: bf16).
  kBf16,
  /// fp32 moments and no master copy, the 16-bit weight updated in place: 8 bytes (MindFormers'
  /// AdamW, AdamWeightDecayX and FP32StateAdamWeightDecay, whose clone_state makes fp32
  /// moments beside float16 parameters).
  kFp32Moments,
};

/// Layers of one stack (blocks "<stack>.layer.<i>": "llm" or "vit") per pipeline stage, in stage
/// order, and how many of them are recomputed in full.
struct StageLayers {
  std::vector<int64_t> layers;
  std::vector<int64_t> recomputed;
};

/// What decides whether a setup fits device memory: the estimate's point (kExpected), or its
/// band's top (kSafe: a setup fits only when the measured error above the estimate still fits).
enum class MemoryPolicy { kExpected, kSafe };

struct TrainingSetup : ParallelConfig {
  int64_t gbs = 0;                 ///< global batch, samples per step
  int64_t seq = 0;                 ///< tokens per sample; 0: the model's
  std::string precision = "bf16";  ///< the compute dtype: "bf16", "fp16" or "fp8"
  /// The framework that runs the setup and its code path: which kernels run and which
  /// communications overlap. A setup made by planner::MegatronConfig starts from the framework's
  /// profile; flags such as --overlap-grad-reduce or --attention unfused change it.
  Framework framework = Framework::kMegatronCore;
  /// An earlier release of the framework the setup runs under ("2023-10" of composer@2023-10;
  /// cost::ProfileRelease); empty: the profile's own.
  std::string frameworkRelease;
  CodePath codePath;
  /// How Adam holds its state (--optimizer-state).
  OptimizerState optimizerState = OptimizerState::kFp32;
  /// Under fp8 the fp8 GEMMs' weights are stored in fp8 (--fp8-param-gather, Megatron-Core's
  /// switch; NeMo's fp8_params): no bf16 copy beside the fp8 cache, and a 1-byte parameter
  /// all-gather.
  bool fp8ParamGather = false;
  /// Non-uniform placement: each block's stage, its chunk when interleaved, and whether it is
  /// recomputed in full (the layer placement search fills it; empty splits layers evenly).
  std::vector<BlockAssignment> placement;
  /// Device memory kept free (--memory-margin): a setup fits when every stage's peak is at most
  /// the device's memory less this.
  int64_t memoryMarginBytes = 0;
  /// Whether the estimate's point or its band's top must fit (--memory-policy).
  MemoryPolicy memoryPolicy = MemoryPolicy::kExpected;

  /// Micro-batches per step: gbs / (dp x mbs), 0 before the batch is set.
  [[nodiscard]] int64_t microBatches() const { return dp * mbs > 0 ? gbs / (dp * mbs) : 0; }

  /// The ZeRO stage the framework runs: under pipeline parallelism a profile with
  /// CodePath::fsdpUnshardedUnderPipeline runs ZeRO 2 and 3 as ZeRO 1.
  /// DeepSpeed's BF16_Optimizer shards the states itself, so ZeRO 0 runs as ZeRO 1 there.
  [[nodiscard]] int zeroAsRun() const {
    if (pp > 1 && zero >= 2 && codePath.fsdpUnshardedUnderPipeline) return 1;
    return bf16OptimizerRuns() ? 1 : zero;
  }

  /// Whether DeepSpeed's BF16_Optimizer runs (CodePath::bf16Optimizer): under bf16 with ZeRO 0,
  /// or ZeRO 1 under a pipeline, whose engine runs bf16 with ZeRO only this way (a stage 0
  /// config: deepspeed/runtime/engine.py _configure_optimizer, pipe/engine.py).
  [[nodiscard]] bool bf16OptimizerRuns() const {
    return codePath.bf16Optimizer && precision == "bf16" && (zero == 0 || (zero == 1 && pp > 1));
  }

  /// Whether ZeRO 1's gradients are all-reduced whole, not reduce-scattered to the slices.
  [[nodiscard]] bool zeroAllReducesGradients() const {
    return zeroAsRun() == 1 &&
           (bf16OptimizerRuns() || (pp > 1 && codePath.pipelineAllReducesZero1));
  }

  /// Whether gradients accumulate in fp32. Megatron-LM does so under bf16 and fp8 (it forces
  /// --accumulate-allreduce-grads-in-fp32 unless --grad-reduce-in-bf16) and keeps them in fp16
  /// under fp16 (the flag's default). DeepSpeed's ZeRO optimizers keep them in the weight's
  /// dtype; its BF16_Optimizer accumulates in fp32.
  [[nodiscard]] bool fp32Gradients() const {
    if (codePath.bf16Optimizer && !bf16OptimizerRuns()) return false;
    return precision != "fp16" && !codePath.gradReduceInBf16;
  }
};

}  // namespace autopar::ir
