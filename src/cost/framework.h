#pragma once
/// \file
/// Framework profiles: what a training framework's code path does, as far as the step time and
/// memory see it, and which parallel configurations it can run at all. The same TP 8 PP 4
/// configuration runs at different speeds under the 2021 Megatron-LM (attention with the score
/// matrix in memory, gradient sync after the backward) and under Megatron-Core (fused attention,
/// the gradient reduce and the parameter gather overlapped). docs/frameworks.md gives the
/// framework source or documentation behind every setting.
///   frameworkProfile(Framework::kMegatronCore).codePath.overlapGradReduce == true
///
/// Every switch of the code path is declared once, in codePathSwitches(): its flag, its doc line
/// and its default under each profile. The command line's --SWITCH / --no-SWITCH flags, their
/// --help, the profiles' code paths and docs/frameworks.md's table are made from it, and the cost
/// model reads the CodePath the request carries (cost::EvaluateOptions::codePath).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ir/op.h"
#include "ir/parallel_config.h"
#include "util/expected.h"

namespace autopar::cost {

enum class Framework {
  kMegatronLm2021,     ///< Megatron-LM at the SC'21 paper's commit (Narayanan et al. 2021)
  kMegatronLm,         ///< Megatron-LM 2022 (v3.0, Korthikanti et al. 2022)
  kMegatronCore,       ///< Megatron-Core, NeMo and Megatron-Bridge from 2024
  kMegatronDeepSpeed,  ///< Megatron-DeepSpeed with DeepSpeed's ZeRO (2021-22)
  kPytorchFsdp,        ///< PyTorch FullyShardedDataParallel (FSDP1), data parallel only
  kTorchtitan,         ///< torchtitan: FSDP2, DTensor TP, torch.distributed.pipelining, CP
  kMindSpore,          ///< MindSpore / MindFormers auto-parallel on Ascend
  kMindSpeed,          ///< MindSpeed (Megatron-Core on Ascend)
};
inline constexpr size_t kFrameworkCount = 8;

/// The code path's switches the cost model reads. Each is a framework behaviour, not a fitted
/// constant: which kernels run and which communications overlap with compute. The defaults here
/// price a plan with its own features only (`autopar plan` without --framework, as the seeds
/// describe MindSpore's): one kernel per op, nothing overlapped; each profile's settings are
/// codePathSwitches()' table.
struct CodePath {
  /// The attention kernel: FlashAttention-2 (PyTorch's scaled_dot_product_attention, Ascend's
  /// FlashAttentionScore), cuDNN's fused attention (Transformer Engine's), or the score matrix
  /// in memory (Megatron-LM's CoreAttention before 2023).
  ir::AttentionKernel attention = ir::AttentionKernel::kFlash;
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
  auto operator<=>(const CodePath&) const = default;
};

/// One switch of the code path, declared once.
struct CodePathSwitch {
  std::string_view
      flag;  ///< "overlap-grad-reduce": --overlap-grad-reduce, --no-overlap-grad-reduce
  std::string_view column;  ///< its column in docs/frameworks.md's table
  std::string_view doc;     ///< what it does, one line (--help, docs)
  bool CodePath::*field;
  /// Its setting under each profile, by Framework.
  std::array<bool, kFrameworkCount> byProfile;
};

/// Every switch, in --help's order.
std::span<const CodePathSwitch> codePathSwitches();

/// The key a yaml or JSON config spells the switch with: its flag in snake case, as Megatron-LM's
/// arguments and NeMo's configs spell theirs ("overlap_grad_reduce").
std::string yamlKey(const CodePathSwitch& codeSwitch);

/// What the framework can run.
struct Capabilities {
  bool tensorParallel = true;
  bool pipelineParallel = true;
  bool interleaved = true;
  bool contextParallel = false;
  bool expertParallel = false;
  /// The zero-bubble H1 schedule, with Qi et al.'s patch (sail-sg/zero-bubble-pipeline-
  /// parallelism's zbpp_light patches Megatron-LM and Megatron-Core); no stock framework runs it.
  bool zeroBubble = false;
  bool fp8 = false;
  /// The ZeRO stages it runs, bit z for stage z (0: plain data parallelism).
  uint8_t zeroStages = 0b0001;
  [[nodiscard]] bool runsZero(int zero) const {
    return zero >= 0 && zero <= 3 && ((zeroStages >> zero) & 1) != 0;
  }
};

struct FrameworkProfile {
  Framework framework;
  std::string_view name;     ///< the --framework value
  std::string_view summary;  ///< what it stands for, one line
  CodePath codePath;         ///< the attention kernel and codePathSwitches()' settings
  Capabilities can;
};

/// "megatron-lm-2021", "megatron-lm", "megatron-core", "megatron-deepspeed", "pytorch-fsdp",
/// "torchtitan", "mindspore", "mindspeed"; the error lists them.
Expected<Framework> parseFramework(std::string_view name);
const FrameworkProfile& frameworkProfile(Framework framework);
/// The accepted names, comma-separated, for help texts and errors.
std::string frameworkNames();

/// Whether the framework can run the configuration in this precision; the error is one line
/// naming the flag: "--framework megatron-lm: cannot run --cp 2 (context parallelism came with
/// Megatron-Core)".
Status checkRunnable(const FrameworkProfile& profile, const ir::ParallelConfig& config,
                     std::string_view precision);

}  // namespace autopar::cost
