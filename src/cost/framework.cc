#include "planner/framework.h"

#include <fmt/format.h>

#include <array>

namespace autopar::planner {

namespace {

// The settings and their sources are in docs/frameworks.md, one row per profile.
constexpr std::array<FrameworkProfile, 8> kProfiles{{
    {Framework::kMegatronLm2021,
     "megatron-lm-2021",
     "Megatron-LM at the SC'21 paper's commit 6985e589 (Narayanan et al. 2021)",
     {.attention = frontend::AttentionKernel::kUnfused, .gradientAccumulationFusion = false},
     {.zeroStages = 0b0001}},
    {Framework::kMegatronLm,
     "megatron-lm",
     "Megatron-LM 2022 (v3.0; Korthikanti et al. 2022): sequence parallelism, selective "
     "recompute, the distributed optimizer",
     {.attention = frontend::AttentionKernel::kUnfused,
      .asyncTpAllreduce = true,
      .gradientSyncInPlace = true},
     {.zeroBubble = true, .zeroStages = 0b0011}},
    {Framework::kMegatronCore,
     "megatron-core",
     "Megatron-Core, NeMo and Megatron-Bridge from 2024 (Transformer Engine)",
     {.attention = frontend::AttentionKernel::kCudnn,
      .asyncTpAllreduce = true,
      .tpCommOverlap = true,
      .overlapGradReduce = true,
      .overlapParamGather = true,
      .gradientSyncInPlace = true,
      .fp8WeightCache = true},
     {.contextParallel = true,
      .expertParallel = true,
      .zeroBubble = true,
      .fp8 = true,
      .zeroStages = 0b1111}},
    {Framework::kMegatronDeepSpeed,
     "megatron-deepspeed",
     "Megatron-DeepSpeed with DeepSpeed's ZeRO (2021-22)",
     {.attention = frontend::AttentionKernel::kUnfused,
      .gradientAccumulationFusion = false,
      .listCollectives = true},
     {.interleaved = false, .expertParallel = true, .zeroStages = 0b1111}},
    {Framework::kPytorchFsdp,
     "pytorch-fsdp",
     "PyTorch FullyShardedDataParallel (FSDP1): data parallelism with sharded states",
     {.gradientAccumulationFusion = false,
      .overlapGradReduce = true,
      .overlapParamGather = true,
      .fusedElementwise = false,
      .inPlaceLossGradient = false,
      .stashGatheredInputs = false},
     {.tensorParallel = false,
      .pipelineParallel = false,
      .interleaved = false,
      .zeroStages = 0b1101}},
    {Framework::kTorchtitan,
     "torchtitan",
     "torchtitan: FSDP2, DTensor tensor parallelism, torch.distributed.pipelining, context "
     "parallelism, float8 linears",
     {.gradientAccumulationFusion = false,
      .overlapGradReduce = true,
      .overlapParamGather = true,
      .fusedElementwise = false,
      .inPlaceLossGradient = false,
      .stashGatheredInputs = false,
      .pipelineKeepsOutputs = true,
      .ringMergesInFp32 = true,
      .fsdpRootStaysGathered = true,
      .selectiveOpPolicy = true,
      .fsdpUnshardedUnderPipeline = true},
     {.contextParallel = true, .fp8 = true, .zeroStages = 0b1101}},
    {Framework::kMindSpore,
     "mindspore",
     "MindSpore / MindFormers auto-parallel on Ascend (graph mode)",
     {.overlapGradReduce = true, .overlapParamGather = true},
     {.contextParallel = true, .expertParallel = true, .zeroStages = 0b0111}},
    {Framework::kMindSpeed,
     "mindspeed",
     "MindSpeed (Megatron-Core on Ascend)",
     {.asyncTpAllreduce = true,
      .overlapGradReduce = true,
      .overlapParamGather = true,
      .gradientSyncInPlace = true},
     {.contextParallel = true, .expertParallel = true, .zeroStages = 0b0011}},
}};

}  // namespace

std::string frameworkNames() {
  std::string names;
  for (const auto& profile : kProfiles) {
    names += names.empty() ? "" : ", ";
    names += profile.name;
  }
  return names;
}

Expected<Framework> parseFramework(std::string_view name) {
  for (const auto& profile : kProfiles) {
    if (profile.name == name) return profile.framework;
  }
  return Error{fmt::format("--framework '{}': expected one of {}", name, frameworkNames())};
}

const FrameworkProfile& frameworkProfile(Framework framework) {
  return kProfiles[static_cast<size_t>(framework)];
}

Status checkRunnable(const FrameworkProfile& profile, const ir::ParallelConfig& config,
                     std::string_view precision) {
  auto refuse = [&](std::string_view what) {
    return Error{
        fmt::format("--framework {}: cannot run {} ({})", profile.name, what, profile.summary)};
  };
  const Capabilities& can = profile.can;
  if (config.tp > 1 && !can.tensorParallel) return refuse(fmt::format("--tp {}", config.tp));
  if (config.pp > 1 && !can.pipelineParallel) return refuse(fmt::format("--pp {}", config.pp));
  if (config.vpp > 1 && !can.interleaved) return refuse(fmt::format("--vpp {}", config.vpp));
  if (config.cp > 1 && !can.contextParallel) return refuse(fmt::format("--cp {}", config.cp));
  if (config.ep > 1 && !can.expertParallel) return refuse(fmt::format("--ep {}", config.ep));
  if (config.zeroBubble() && !can.zeroBubble) {
    return refuse("the zero-bubble H1 schedule, whose patch is for Megatron-LM and Megatron-Core");
  }
  if (precision == "fp8" && !can.fp8) return refuse("--precision fp8");
  if (!can.runsZero(config.zero)) return refuse(fmt::format("--zero {}", config.zero));
  return {};
}

}  // namespace autopar::planner
