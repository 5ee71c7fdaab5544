#include "export/megatron_args.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <set>

namespace autopar::exporters {

int deepSpeedZeroStage(const ir::TrainingSetup& config) {
  return config.bf16OptimizerRuns() ? 0 : config.zero;
}

namespace {

/// How Megatron-LM places the layers: evenly by default; uneven first and last stages with
/// --decoder-first/last-pipeline-num-layers when the middle stages are even and there is one
/// chunk per stage; any other split with Megatron-Core's --pipeline-model-parallel-layout.
std::string layerArguments(const ir::TrainingSetup& config,
                           const std::vector<int64_t>& virtualStageLayers) {
  const auto even = [](auto begin, auto end) {
    return std::adjacent_find(begin, end, std::not_equal_to<>()) == end;
  };
  if (even(virtualStageLayers.begin(), virtualStageLayers.end())) {
    if (config.vpp <= 1 || virtualStageLayers.empty()) return "";
    return fmt::format(" --num-layers-per-virtual-pipeline-stage {}", virtualStageLayers.front());
  }
  if (config.vpp <= 1 && virtualStageLayers.size() > 2 &&
      even(virtualStageLayers.begin() + 1, virtualStageLayers.end() - 1)) {
    return fmt::format(
        " --decoder-first-pipeline-num-layers {} --decoder-last-pipeline-num-layers {}",
        virtualStageLayers.front(), virtualStageLayers.back());
  }
  return fmt::format(" --pipeline-model-parallel-layout \"{}\"",
                     pipelineLayout(virtualStageLayers));
}

/// ZeRO: the distributed optimizer (1), Megatron-Core's Megatron-FSDP for 2 and 3 (its sharding
/// strategies optim_grads and optim_grads_params need the distributed optimizer and run without
/// gradient-accumulation fusion), or DeepSpeed's stage under Megatron-DeepSpeed.
std::string shardingArguments(const ir::TrainingSetup& config) {
  if (config.framework == ir::Framework::kMegatronDeepSpeed) {
    return fmt::format(" --deepspeed --zero-stage {}", deepSpeedZeroStage(config));
  }
  if (config.zero == 0) return "";
  if (config.zero == 1) return " --use-distributed-optimizer";
  return fmt::format(
      " --use-megatron-fsdp --data-parallel-sharding-strategy {} --use-distributed-optimizer "
      "--ckpt-format fsdp_dtensor",
      config.zero == 2 ? "optim_grads" : "optim_grads_params");
}

/// The switches of the profile's code path that are not the framework's defaults: Megatron-Core's
/// overlaps (off by default there), unfused attention, no gradient-accumulation fusion.
std::string codePathArguments(const ir::TrainingSetup& config) {
  const ir::CodePath& code = config.codePath;
  std::string args;
  if (code.overlapGradReduce && config.dp * config.cp > 1) args += " --overlap-grad-reduce";
  if (code.overlapParamGather && config.zero >= 1) args += " --overlap-param-gather";
  if (code.tpCommOverlap && config.tp > 1 && config.sequenceParallel) args += " --tp-comm-overlap";
  if (code.gradReduceInBf16) args += " --grad-reduce-in-bf16";
  if (config.fp8ParamGather) args += " --fp8-param-gather";
  if (code.overlapExpertComm && config.ep > 1) {
    args += " --overlap-moe-expert-parallel-comm --delay-wgrad-compute";
  }
  const bool core = config.framework == ir::Framework::kMegatronCore ||
                    config.framework == ir::Framework::kMindSpeed;
  const bool unfused = code.attention == ir::AttentionKernel::kUnfused;
  if (core && unfused) args += " --attention-backend unfused";
  if (core && code.attention == ir::AttentionKernel::kFlash) {
    args += " --attention-backend flash";
  }
  if (!core && !unfused) args += " --use-flash-attn";
  if (!code.gradientAccumulationFusion || config.zero >= 2) {
    args += " --no-gradient-accumulation-fusion";
  }
  return args;
}

}  // namespace

std::string pipelineLayout(const std::vector<int64_t>& virtualStageLayers) {
  std::vector<std::string> stages;
  for (size_t v = 0; v < virtualStageLayers.size(); ++v) {
    std::string stage = v == 0 ? "E" : "";
    if (virtualStageLayers[v] > 0) stage += fmt::format("t*{}", virtualStageLayers[v]);
    if (v + 1 == virtualStageLayers.size()) stage += stage.empty() ? "L" : ",L";
    stages.push_back(stage);
  }
  return fmt::format("{}", fmt::join(stages, "|"));
}

std::string megatronArguments(const ir::TrainingSetup& config,
                              const std::vector<int64_t>& virtualStageLayers) {
  std::string args = fmt::format(
      "--tensor-model-parallel-size {} --pipeline-model-parallel-size {} --micro-batch-size {} "
      "--global-batch-size {}",
      config.tp, config.pp, config.mbs, config.gbs);
  if (config.cp > 1) args += fmt::format(" --context-parallel-size {}", config.cp);
  if (config.ep > 1) {
    args += fmt::format(" --expert-model-parallel-size {} --moe-token-dispatcher-type alltoall",
                        config.ep);
  }
  args += layerArguments(config, virtualStageLayers);
  if (config.sequenceParallel) args += " --sequence-parallel";
  if (config.recompute == ir::Recompute::kSelective) args += " --recompute-granularity selective";
  if (config.recompute == ir::Recompute::kFull) {
    args += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  }
  args += shardingArguments(config);
  args += codePathArguments(config);
  return args;
}

std::vector<int64_t> virtualStageLayers(const plan::Plan& plan) {
  const auto stages = static_cast<size_t>(std::max(plan.pipeline.stages, 1));
  const auto chunks = static_cast<size_t>(std::max(plan.pipeline.virtualStages, 1));
  std::vector<std::set<std::string>> layers(stages * chunks);
  for (const plan::OpRecord& op : plan.ops) {
    if (!ir::isStackLayer(op.block) || !ir::blockInScope(op.block, "llm")) continue;
    const size_t virtualStage =
        static_cast<size_t>(op.chunk) * stages + static_cast<size_t>(op.stage);
    if (virtualStage < layers.size()) layers[virtualStage].insert(op.block);
  }
  std::vector<int64_t> counts;
  for (const auto& blocks : layers) counts.push_back(static_cast<int64_t>(blocks.size()));
  return counts;
}

Expected<std::string> megatronArguments(const plan::Plan& plan) {
  if (!plan.setup) {
    return Error{
        "the plan has no training setup for Megatron-LM (an op-level plan gets one "
        "when its shardings are Megatron's)"};
  }
  return megatronArguments(*plan.setup, virtualStageLayers(plan));
}

std::string argumentLines(std::string_view arguments) {
  std::string lines;
  size_t start = 0;
  while (start < arguments.size()) {
    size_t next = arguments.find(" --", start);
    if (next == std::string_view::npos) next = arguments.size();
    if (!lines.empty()) lines += " \\\n  ";
    lines += arguments.substr(start, next - start);
    start = next + 1;
  }
  return lines;
}

std::vector<std::string> megatronNotes(const ir::TrainingSetup& config) {
  std::vector<std::string> notes;
  if (config.zeroBubble()) {
    notes.emplace_back(
        "the zero-bubble H1 schedule needs Qi et al.'s patch "
        "(sail-sg/zero-bubble-pipeline-parallelism); stock Megatron-LM runs 1F1B");
  }
  if (const size_t recomputed = ir::recomputedBlocks(config.placement); recomputed > 0) {
    notes.push_back(fmt::format(
        "full recompute of {} layers, the first of each stage (llm_layer_recompute): "
        "--recompute-granularity full --recompute-method block --recompute-num-layers N, N per "
        "stage",
        recomputed));
  }
  if (config.optimizerState != ir::OptimizerState::kFp32) {
    notes.emplace_back(
        "the optimizer state was costed as --optimizer-state holds it (NeMo's "
        "distributed_fused_adam, MindFormers' AdamW); Megatron-LM's optimizer keeps an fp32 master "
        "copy and fp32 moments, "
        "12 bytes per parameter");
  }
  return notes;
}

}  // namespace autopar::exporters
