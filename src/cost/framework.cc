#include "cost/framework.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "ir/setting.h"

namespace autopar::cost {

namespace {

// The settings and their sources are in docs/frameworks.md. Each switch's settings are listed
// by profile, in Framework's order:
//   megatron-lm-2021, megatron-lm, megatron-core, megatron-deepspeed,
//   pytorch-fsdp, torchtitan, mindspore, mindspeed, composer (FSDP1's settings, as pytorch-fsdp)
constexpr CodePathSwitch kSwitches[] = {
    {"overlap-grad-reduce",
     "DP grad reduce overlapped",
     "reduce data-parallel gradients in buckets during the backward",
     &CodePath::overlapGradReduce,
     {false, false, true, false, true, true, true, true, true}},
    {"overlap-param-gather",
     "param gather overlapped",
     "all-gather sharded parameters during the forward (distributed optimizer, FSDP prefetch)",
     &CodePath::overlapParamGather,
     {false, false, true, false, true, true, true, true, true}},
    {"tp-comm-overlap",
     "TP comm overlap",
     "overlap tensor-parallel communication with the GEMMs forward and backward (Transformer "
     "Engine's userbuffers: the all-gathers and reduce-scatters of sequence parallelism, not "
     "all-reduces)",
     &CodePath::tpCommOverlap,
     {false, false, true, false, false, false, false, false, false}},
    {"async-tensor-model-parallel-allreduce",
     "async TP",
     "overlap the backward's tensor-parallel communication with the backward GEMMs",
     &CodePath::asyncTpAllreduce,
     {false, true, true, false, false, false, false, true, false}},
    {"overlap-moe-expert-parallel-comm",
     "MoE token exchange overlapped",
     "overlap the mixture-of-experts token all-to-all with another micro-batch's compute "
     "(Megatron-Core 0.14); without it, the dispatcher waits on it",
     &CodePath::overlapExpertComm,
     {false, false, false, false, false, false, false, false, false}},
    {"overlap-ring-exchange",
     "CP ring overlapped",
     "under --cp the key/value exchange of ring attention runs under the previous ring step's "
     "attention (Transformer Engine's and MindSpeed's ring attention); without it, it waits",
     &CodePath::overlapRingExchange,
     {false, false, true, false, false, false, false, true, false}},
    {"grad-reduce-in-bf16",
     "grads reduced in bf16",
     "accumulate and reduce gradients in bf16, not fp32 (bf16 and fp8 precision): half the "
     "gradient buffer and half the data-parallel traffic",
     &CodePath::gradReduceInBf16,
     {false, false, false, false, false, false, false, false, false}},
    {"list-collectives",
     "list collectives",
     "collectives take per-rank tensor lists, one copy per rank (DeepSpeed's ZeRO-3, 2021)",
     &CodePath::listCollectives,
     {false, false, false, true, false, false, false, false, false}},
    {"gradient-accumulation-fusion",
     "GA fusion",
     "weight-gradient GEMMs accumulate into the fp32 gradient buffer in place; without it, an add "
     "kernel per micro-batch (PyTorch's AccumulateGrad, Megatron-LM before 2022)",
     &CodePath::gradientAccumulationFusion,
     {false, true, true, false, false, false, true, true, false}},
    {"fused-elementwise",
     "fused elementwise",
     "chains of elementwise ops run as one kernel (Megatron's fusions, torch.compile); under "
     "--selective-op-policy, torch.compile also keeps only the saved outputs the backward needs",
     &CodePath::fusedElementwise,
     {true, true, true, true, false, false, true, true, false}},
    {"fused-norm",
     "fused RMSNorm",
     "RMSNorm runs as one kernel forward and one backward (Apex, Transformer Engine, torch 2.9's "
     "nn.RMSNorm); without it, as eager PyTorch's composite ops (Hugging Face's LlamaRMSNorm, "
     "torchtitan before torch 2.9) unless --fused-elementwise",
     &CodePath::fusedNorm,
     {true, true, true, true, false, true, true, true, false}},
    {"in-place-loss-gradient",
     "in-place loss gradient",
     "the cross entropy's gradient is written into its kept fp32 softmax (Megatron); without it, "
     "two fp32 logits-sized buffers (PyTorch's log_softmax)",
     &CodePath::inPlaceLossGradient,
     {true, true, true, true, false, false, true, true, false}},
    {"stash-gathered-inputs",
     "gathered inputs stashed",
     "a GEMM that reads a gathered activation keeps its sharded source and gathers it again in "
     "the backward (Megatron-LM); without it, the gathered input is kept (PyTorch DTensor)",
     &CodePath::stashGatheredInputs,
     {true, true, true, true, false, false, true, true, false}},
    {"pipeline-keeps-outputs",
     "stage outputs kept under PP",
     "under pipeline parallelism every micro-batch's stage output is kept until the step ends, "
     "the last stage's fp32 logits (torch.distributed.pipelining)",
     &CodePath::pipelineKeepsOutputs,
     {false, false, false, false, false, true, false, false, false}},
    {"ring-merges-in-fp32",
     "CP steps merged in fp32",
     "under --cp each ring step's attention output is merged by separate fp32 kernels and the "
     "query and key/value gradients accumulate in fp32 (PyTorch's context_parallel)",
     &CodePath::ringMergesInFp32,
     {false, false, false, false, false, true, false, false, false}},
    {"fsdp-root-stays-gathered",
     "FSDP root stays gathered",
     "under --zero 3 the parameters outside the layers and the last layer's stay gathered from "
     "forward to backward (FSDP2's root, torchtitan's last block)",
     &CodePath::fsdpRootStaysGathered,
     {false, false, false, false, false, true, false, false, false}},
    {"selective-op-policy",
     "selective = per-op policy",
     "--recompute selective keeps the attention and every other matmul's output and recomputes "
     "the rest of each layer (torchtitan); without it, the attention core alone is recomputed "
     "(Megatron)",
     &CodePath::selectiveOpPolicy,
     {false, false, false, false, false, true, false, false, false}},
    {"fsdp-unsharded-under-pipeline",
     "FSDP unsharded under PP",
     "under pipeline parallelism FSDP gathers the parameters once and reduces the gradients at "
     "the last backward (torch.distributed.pipelining): ZeRO 2 and 3 run as ZeRO 1",
     &CodePath::fsdpUnshardedUnderPipeline,
     {false, false, false, false, false, true, false, false, false}},
    {"grad-sync-in-place",
     "grad sync in place",
     "the data-parallel gradient sync runs in place in one contiguous gradient buffer (Megatron's "
     "DDP and distributed optimizer); without it, a communication buffer per sync",
     &CodePath::gradientSyncInPlace,
     {false, true, true, false, false, false, false, true, false}},
    {"fp8-weight-cache",
     "fp8 weight cache",
     "under --precision fp8 each fp8 GEMM's weight is kept cast to fp8, with its transpose, for "
     "the whole step (Transformer Engine); without it, cast anew at every use (torchao)",
     &CodePath::fp8WeightCache,
     {false, false, true, false, false, false, false, false, false}},
    {"pipeline-all-reduces-zero1",
     "ZeRO 1 all-reduced under PP",
     "under --zero 1 with --pp > 1 the gradients are all-reduced whole after the last backward "
     "and the updated parameters all-gathered (DeepSpeed's pipeline engine); without it, "
     "reduce-scattered to each rank's slice (a distributed optimizer)",
     &CodePath::pipelineAllReducesZero1,
     {false, false, false, true, false, false, false, false, false}},
    {"bf16-optimizer",
     "BF16_Optimizer",
     "under bf16 with --zero 0, or --zero 1 with --pp > 1, DeepSpeed's BF16_Optimizer: states "
     "sharded (ZeRO 0 runs as 1), fp32 gradients beside the bf16 ones autograd keeps, reduced in "
     "bf16; otherwise DeepSpeed's ZeRO keeps bf16 gradients",
     &CodePath::bf16Optimizer,
     {false, false, false, true, false, false, false, false, false}},
};

struct ProfileEntry {
  Framework framework;
  std::string_view name;
  std::string_view summary;
  std::string_view models;
  std::string_view tag;
  ir::AttentionKernel attention;
  Capabilities can;
  ir::LossKernel loss = ir::LossKernel::kFp32;
};

/// FSDP1's: data parallelism only, with ZeRO 0, 2 or 3 (NO_SHARD, SHARD_GRAD_OP, FULL_SHARD).
constexpr Capabilities kFsdp1{
    .tensorParallel = false, .pipelineParallel = false, .interleaved = false, .zeroStages = 0b1101};

constexpr Capabilities withFp8(Capabilities can) {
  can.fp8 = true;
  return can;
}

constexpr ProfileEntry kProfileEntries[kFrameworkCount] = {
    {Framework::kMegatronLm2021,
     "megatron-lm-2021",
     "Megatron-LM at the SC'21 paper's commit 6985e589 (Narayanan et al. 2021)",
     "Megatron-LM 6985e589 (2021-08)",
     "2021-08",
     ir::AttentionKernel::kUnfused,
     {.sequenceParallel = false, .selectiveRecompute = false, .zeroStages = 0b0001}},
    {Framework::kMegatronLm,
     "megatron-lm",
     "Megatron-LM 2022 (v3.0; Korthikanti et al. 2022): sequence parallelism, selective "
     "recompute, the distributed optimizer",
     "Megatron-LM as Korthikanti et al. ran it (arXiv 2205.05198, 2022-05), released as v3.0",
     "2022-05",
     ir::AttentionKernel::kUnfused,
     {.zeroBubble = true, .zeroStages = 0b0011}},
    {Framework::kMegatronCore,
     "megatron-core",
     "Megatron-Core, NeMo and Megatron-Bridge from 2024 (Transformer Engine)",
     "Megatron-Core 0.8 (2024-08) to Megatron-LM d98e8a6 (2026-08); NeMo 2.x",
     "2026-08",
     ir::AttentionKernel::kCudnn,
     {.contextParallel = true,
      .expertParallel = true,
      .zeroBubble = true,
      .fp8 = true,
      .zeroStages = 0b1111}},
    {Framework::kMegatronDeepSpeed,
     "megatron-deepspeed",
     "Megatron-DeepSpeed with DeepSpeed's ZeRO (2021-22)",
     "Megatron-DeepSpeed with DeepSpeed's ZeRO as Narayanan et al. compared them (arXiv "
     "2104.04473, 2021-04)",
     "2021-04",
     ir::AttentionKernel::kUnfused,
     {.interleaved = false,
      .expertParallel = true,
      .sequenceParallel = false,
      .selectiveRecompute = false,
      .zeroStages = 0b1111,
      .shardedGradientsUnderPipeline = false}},
    {Framework::kPytorchFsdp, "pytorch-fsdp",
     "PyTorch FullyShardedDataParallel (FSDP1): data parallelism with sharded states",
     "PyTorch 2.0 (2023-03) to 2.6 (2025-01), scaled_dot_product_attention's flash backend",
     "2025-01", ir::AttentionKernel::kFlash, kFsdp1},
    {Framework::kTorchtitan,
     "torchtitan",
     "torchtitan: FSDP2, DTensor tensor parallelism, torch.distributed.pipelining, context "
     "parallelism, float8 linears",
     "torchtitan 9530a874d (2026-06, its recipes' ChunkedLossWrapper) to b5bcd76 (2026-08)",
     "2026-08",
     ir::AttentionKernel::kFlash,
     {.contextParallel = true, .fp8 = true, .zeroStages = 0b1101},
     ir::LossKernel::kChunked},
    {Framework::kMindSpore,
     "mindspore",
     "MindSpore / MindFormers auto-parallel on Ascend (graph mode)",
     "MindSpore 2.x with MindFormers fd4deeb (as of 2026-08)",
     "2026-08",
     ir::AttentionKernel::kFlash,
     {.contextParallel = true,
      .expertParallel = true,
      .zeroStages = 0b0111,
      .zeroAsOptimizerParallel = true}},
    {Framework::kMindSpeed,
     "mindspeed",
     "MindSpeed (Megatron-Core on Ascend)",
     "MindSpeed 028de58 (as of 2026-08)",
     "2026-08",
     ir::AttentionKernel::kFlash,
     {.contextParallel = true, .expertParallel = true, .zeroStages = 0b0011}},
    // Composer's FSDP1 (composer/distributed/dist_strategy.py) runs llm-foundry's models with
    // flash-attn's fused cross entropy, MPT's default loss_fn (mosaicml/llm-foundry@8c8dd48f,
    // llmfoundry/models/mpt/modeling_mpt.py), and fp8 through Transformer Engine's linears under
    // te.fp8_autocast (composer/core/precision.py, AMP_FP8).
    {Framework::kComposer, "composer",
     "MosaicML Composer with llm-foundry: FSDP1, flash-attn's fused loss, Transformer Engine fp8",
     "llm-foundry v0.7.0 (2024-03, MPT's attn_impl: flash) to 8c8dd48f (2025-07)", "2025-07",
     ir::AttentionKernel::kFlash, withFp8(kFsdp1), ir::LossKernel::kFused},
};

/// Earlier releases whose code path differs from their profile's (docs/frameworks.md).
constexpr ProfileRelease kReleases[] = {
    // llm-foundry's MPT benchmark tables of 2023-10 (scripts/train/benchmarking/
    // submit_benchmarks.py at b2a43a14) ran v0.3.0 with flash-attn 1.0.9 and attn_impl: triton,
    // the benchmark script's default and every MPT yaml's until v0.7.0 (c26309de).
    {Framework::kComposer, "2023-10",
     "llm-foundry v0.3.0 (2023-09) with flash-attn 1.0.9: MPT's attn_impl: triton, the Triton "
     "FlashAttention kernel",
     ir::AttentionKernel::kFlash1, ir::LossKernel::kFused, /*fusedNorm=*/std::nullopt},
    // torchtitan's llama3 recipes took ChunkedLossWrapper on 2026-06-26 (9530a874d,
    // torchtitan/models/llama3/config_registry.py); before, F.cross_entropy over the whole
    // logits, upcast to fp32 (torchtitan/components/loss.py).
    {Framework::kTorchtitan, "2026-05",
     "torchtitan 9810191 (2026-02-23, configurations as Python modules) to 2026-06-25, before "
     "its recipes chunked the loss: F.cross_entropy over the whole logits in fp32",
     ir::AttentionKernel::kFlash, ir::LossKernel::kFp32, /*fusedNorm=*/std::nullopt},
    // The same code path in the last releases with TOML job configs, whose job config the
    // exporter writes (export/torchtitan_job.h): v0.2.0 (2025-10, torch 2.9, whose nn.RMSNorm
    // runs fused kernels) to v0.2.2 (73a0e6979, 2026-02-20).
    {Framework::kTorchtitan, "2026-02",
     "torchtitan v0.2.0 (2025-10, torch 2.9) to v0.2.2 (2026-02-20), the last releases with TOML "
     "job configs (--job.config_file): F.cross_entropy over the whole logits in fp32",
     ir::AttentionKernel::kFlash, ir::LossKernel::kFp32, /*fusedNorm=*/true,
     /*replicasRunAlone=*/true},
    // Before torch 2.9 an RMSNorm ran as eager ops: torchtitan's own RMSNorm class
    // (torchtitan/models/norms.py, norm_type "rmsnorm" in every llama3 config at 9dec370, the
    // commit of its 2024-12 H100 benchmarks), then nn.RMSNorm (3b39d7ab0, 2025-03-19), whose
    // F.rms_norm was composite until torch 2.9 added _fused_rms_norm_backward.
    {Framework::kTorchtitan, "2024-12",
     "torchtitan with torch 2.6 (2024-12, its H100 benchmarks at 9dec370) to 2.8 (2025-09): "
     "RMSNorm as eager ops, F.cross_entropy over the whole logits in fp32; TOML job configs",
     ir::AttentionKernel::kFlash, ir::LossKernel::kFp32, /*fusedNorm=*/false,
     /*replicasRunAlone=*/true},
};

/// The profiles, their code paths set from the switches' table.
const std::array<FrameworkProfile, kFrameworkCount>& profiles() {
  static const std::array<FrameworkProfile, kFrameworkCount> made = [] {
    std::array<FrameworkProfile, kFrameworkCount> out{};
    for (size_t f = 0; f < kFrameworkCount; ++f) {
      const ProfileEntry& entry = kProfileEntries[f];
      CodePath code;
      code.attention = entry.attention;
      code.loss = entry.loss;
      for (const CodePathSwitch& codeSwitch : kSwitches) {
        code.*codeSwitch.field = codeSwitch.byProfile[f];
      }
      out[f] = {entry.framework, entry.name, entry.summary, entry.models,
                entry.tag,       code,       entry.can};
    }
    return out;
  }();
  return made;
}

}  // namespace

std::span<const CodePathSwitch> codePathSwitches() { return kSwitches; }

std::string switchFlag(bool CodePath::*field) {
  const auto* found = std::ranges::find_if(
      kSwitches, [&](const CodePathSwitch& each) { return each.field == field; });
  // Callers name fields that have a switch; each switch's field leads back to its flag
  // (cost/framework_test.cc).
  if (found == std::end(kSwitches)) return "--code-path";
  return fmt::format("--{}", found->flag);
}

std::string yamlKey(const CodePathSwitch& codeSwitch) {
  std::string key(codeSwitch.flag);
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

std::string frameworkNames() {
  std::string names;
  for (const auto& profile : profiles()) {
    names += names.empty() ? "" : ", ";
    names += profile.name;
  }
  return names;
}

std::span<const ProfileRelease> FrameworkProfile::earlier() const {
  const auto* first = std::ranges::find(kReleases, framework, &ProfileRelease::framework);
  const auto* last = std::find_if(first, std::end(kReleases), [&](const ProfileRelease& each) {
    return each.framework != framework;
  });
  return {first, last};
}

Expected<FrameworkChoice> parseFramework(std::string_view name) {
  const size_t at = name.find('@');
  const std::string_view base = name.substr(0, at);
  for (const auto& profile : profiles()) {
    if (profile.name != base) continue;
    if (at == std::string_view::npos) return FrameworkChoice{profile.framework, ""};
    const std::string_view tag = name.substr(at + 1);
    if (tag == profile.tag) return FrameworkChoice{profile.framework, ""};
    if (profile.earlierRelease(tag)) return FrameworkChoice{profile.framework, std::string(tag)};
    std::vector<std::string> known{
        fmt::format("{}@{} ({})", profile.name, profile.tag, profile.models)};
    for (const ProfileRelease& release : profile.earlier()) {
      known.push_back(fmt::format("{}@{} ({})", profile.name, release.tag, release.release));
    }
    return Error{fmt::format("{} '{}': expected {}", ir::flag(ir::Setting::kFramework), name,
                             fmt::join(known, " or "))};
  }
  return Error{fmt::format("{} '{}': expected one of {}", ir::flag(ir::Setting::kFramework), name,
                           frameworkNames())};
}

const ProfileRelease* FrameworkProfile::earlierRelease(std::string_view tag) const {
  const std::span<const ProfileRelease> releases = earlier();
  const auto found = std::ranges::find(releases, tag, &ProfileRelease::tag);
  return found == releases.end() ? nullptr : &*found;
}

CodePath releaseCodePath(Framework framework, std::string_view release) {
  const FrameworkProfile& profile = frameworkProfile(framework);
  CodePath code = profile.codePath;
  if (const ProfileRelease* each = profile.earlierRelease(release)) {
    code.attention = each->attention;
    code.loss = each->loss;
    code.fusedNorm = each->fusedNorm.value_or(code.fusedNorm);
  }
  return code;
}

namespace {

constexpr std::pair<std::string_view, ir::AttentionKernel> kAttentionKernels[] = {
    {"flash", ir::AttentionKernel::kFlash},
    {"flash1", ir::AttentionKernel::kFlash1},
    {"cudnn", ir::AttentionKernel::kCudnn},
    {"unfused", ir::AttentionKernel::kUnfused}};
constexpr std::pair<std::string_view, ir::LossKernel> kLossKernels[] = {
    {"fp32", ir::LossKernel::kFp32},
    {"fused", ir::LossKernel::kFused},
    {"chunked", ir::LossKernel::kChunked}};

/// The kernel `name` names in `table`, or one line naming the flag and every name in it.
template <class Kernel, size_t N>
Expected<Kernel> kernelNamed(const std::pair<std::string_view, Kernel> (&table)[N],
                             std::string_view flag, std::string_view name) {
  std::string names;
  for (size_t i = 0; i < N; ++i) {
    if (table[i].first == name) return table[i].second;
    names += fmt::format("{}{}", i == 0 ? "" : i + 1 == N ? " or " : ", ", table[i].first);
  }
  return Error{fmt::format("{} {}: expected {}", flag, name, names)};
}

}  // namespace

Expected<ir::AttentionKernel> parseAttentionKernel(std::string_view name) {
  return kernelNamed(kAttentionKernels, "--attention", name);
}

Expected<ir::LossKernel> parseLossKernel(std::string_view name) {
  return kernelNamed(kLossKernels, "--loss", name);
}

std::string_view lossKernelName(ir::LossKernel kernel) {
  return std::ranges::find(kLossKernels, kernel,
                           &std::pair<std::string_view, ir::LossKernel>::second)
      ->first;
}

ir::OptimizerState defaultOptimizerState(Framework framework) {
  return framework == Framework::kMindSpore ? ir::OptimizerState::kFp32Moments
                                            : ir::OptimizerState::kFp32;
}

std::string frameworkLabel(Framework framework, std::string_view release) {
  const std::string_view name = frameworkProfile(framework).name;
  return release.empty() ? std::string(name) : fmt::format("{}@{}", name, release);
}

Framework defaultFramework(const cluster::DeviceSpec& device) {
  return device.name.starts_with("Ascend") ? Framework::kMindSpeed : Framework::kMegatronCore;
}

const FrameworkProfile& frameworkProfile(Framework framework) {
  return profiles()[static_cast<size_t>(framework)];
}

Status checkRunnable(const FrameworkProfile& profile, const ir::ParallelConfig& config,
                     std::string_view precision, std::string_view release) {
  auto refuse = [&](std::string_view what) {
    return Error{fmt::format("{}: cannot run {} ({})",
                             ir::flag(ir::Setting::kFramework, profile.name), what,
                             profile.summary)};
  };
  const Capabilities& can = profile.can;
  using ir::flag;
  using ir::Setting;
  if (config.tp > 1 && !can.tensorParallel) return refuse(flag(Setting::kTp, config.tp));
  if (config.pp > 1 && !can.pipelineParallel) return refuse(flag(Setting::kPp, config.pp));
  if (config.vpp > 1 && !can.interleaved) return refuse(flag(Setting::kVpp, config.vpp));
  if (config.cp > 1 && !can.contextParallel) return refuse(flag(Setting::kCp, config.cp));
  if (config.ep > 1 && !can.expertParallel) return refuse(flag(Setting::kEp, config.ep));
  if (config.sequenceParallel && !can.sequenceParallel) {
    return refuse(flag(Setting::kSequenceParallel));
  }
  if (config.recompute == ir::Recompute::kSelective && !can.selectiveRecompute) {
    return refuse(flag(Setting::kRecompute, "selective"));
  }
  if (config.zeroBubble() && !can.zeroBubble) {
    return refuse("the zero-bubble H1 schedule, whose patch is for Megatron-LM and Megatron-Core");
  }
  if (precision == "fp8" && !can.fp8) return refuse(flag(Setting::kPrecision, "fp8"));
  if (!can.runsZero(config.zero)) return refuse(flag(Setting::kZero, config.zero));
  if (config.zero >= 2 && config.pp > 1 && !can.shardedGradientsUnderPipeline) {
    return refuse(fmt::format("{} with {}: its pipeline engine runs ZeRO 0 and 1 only",
                              flag(Setting::kZero, config.zero), flag(Setting::kPp, config.pp)));
  }
  const ProfileRelease* earlier = profile.earlierRelease(release);
  const bool modelParallel = config.tp > 1 || config.pp > 1 || config.cp > 1;
  if (earlier && earlier->replicasRunAlone && config.zero == 0 && config.dp > 1 && modelParallel) {
    return Error{fmt::format(
        "{}@{}: cannot run {} with {} beside tensor, pipeline or context parallelism (its DDP "
        "runs alone); use {} or {}",
        ir::flag(ir::Setting::kFramework, profile.name), release, flag(Setting::kZero, 0),
        flag(Setting::kDp, config.dp), flag(Setting::kZero, 3), profile.name)};
  }
  return {};
}

}  // namespace autopar::cost
