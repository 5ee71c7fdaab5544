#include "export/estimate_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>

#include "planner/inputs.h"

namespace autopar::exporters {

namespace {

/// "1", or "0, run as 1 by DeepSpeed's BF16_Optimizer" where the framework runs another stage.
std::string zeroAsRunLabel(const ir::TrainingSetup& config) {
  const int run = config.zeroAsRun();
  if (run == config.zero) return std::to_string(config.zero);
  const std::string_view why = config.bf16OptimizerRuns()
                                   ? "by DeepSpeed's BF16_Optimizer, which shards the states"
                                   : "under the pipeline, which keeps FSDP's gradients whole";
  return fmt::format("{}, run as {} {}", config.zero, run, why);
}

}  // namespace

std::string formatEstimateReport(const planner::MegatronConfig& config,
                                 const planner::ConfigEstimate& estimate,
                                 const search::Placement* placement,
                                 const search::AnalyticEstimate* screen) {
  std::string text;
  auto out = std::back_inserter(text);
  const auto& step = estimate.evaluated.estimate;
  fmt::format_to(out, "autopar estimate: {} on {} ({} x {})\n", config.model, estimate.cluster.name,
                 estimate.worldSize, estimate.cluster.device.name);
  const std::string context = config.cp > 1 ? fmt::format(" CP {}", config.cp) : "";
  const std::string expert = config.ep > 1 ? fmt::format(" EP {}", config.ep) : "";
  fmt::format_to(
      out,
      "  TP {}{} PP {} DP {}{} VPP {}  micro-batch {} x {} per step, global batch {}, sequence "
      "{}{}{}\n",
      config.tp, context, config.pp, config.dp, expert, config.vpp, config.mbs,
      estimate.microBatches, config.gbs, estimate.sequence,
      config.sequenceParallel ? ", sequence parallel" : "",
      config.zeroBubble() ? ", zero-bubble H1" : "");
  const std::string_view recomputed = ir::recomputeName(config.recompute);
  const size_t placedRecompute = ir::recomputedBlocks(config.placement);
  const std::string recompute = placedRecompute == 0 ? std::string(recomputed)
                                                     : fmt::format("{}, full on {} placed layers",
                                                                   recomputed, placedRecompute);
  fmt::format_to(out, "  recompute {}, ZeRO {}, {}\n\n", recompute, zeroAsRunLabel(config),
                 config.precision);
  if (estimate.opSearchStepSeconds > 0) {
    const std::string searched =
        fmt::format("--op-search {}", planner::opSearchName(config.opSearch));
    const std::string megatron = "Megatron-LM's annotation";
    fmt::format_to(out, "blocks sharded by {}: {} on the full model ({}: {})\n\n",
                   estimate.opSearchTaken ? searched : megatron,
                   planner::formatSeconds(estimate.stepSeconds),
                   estimate.opSearchTaken ? megatron : searched,
                   planner::formatSeconds(estimate.opSearchTaken ? estimate.megatronStepSeconds
                                                                 : estimate.opSearchStepSeconds));
  }
  fmt::format_to(out, "step time        {}\n", planner::formatSeconds(estimate.stepSeconds));
  fmt::format_to(out, "  compute        {}\n", planner::formatSeconds(step.computeSeconds));
  fmt::format_to(out, "  exposed comm   {}\n",
                 planner::formatSeconds(step.exposedCommunicationSeconds));
  fmt::format_to(out, "  bubble         {}\n", planner::formatSeconds(step.bubbleSeconds));
  fmt::format_to(out, "  optimizer      {}\n", planner::formatSeconds(step.optimizerSeconds));
  fmt::format_to(out, "throughput       {:.0f} tokens/s\n", estimate.tokensPerSecond);
  fmt::format_to(out, "model TFLOP/s    {:.4g} per GPU (MFU {:.1f}%), {:.4g} with recompute\n\n",
                 estimate.tflopsPerGpu, 100 * estimate.mfu, estimate.hardwareTflopsPerGpu);
  fmt::format_to(out, "{:>5} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10}\n",
                 "stage", "peak", "params", "grads", "optimizer", "activations", "workspace",
                 "comm", "runtime", "in flight");
  for (size_t s = 0; s < step.stages.size(); ++s) {
    const auto& memory = step.stages[s].memory;
    fmt::format_to(
        out, "{:>5} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10}\n", s,
        planner::formatBytes(memory.total()), planner::formatBytes(memory.parameterBytes),
        planner::formatBytes(memory.gradientBytes), planner::formatBytes(memory.optimizerBytes),
        planner::formatBytes(memory.activationBytes), planner::formatBytes(memory.workspaceBytes),
        planner::formatBytes(memory.communicationBytes), planner::formatBytes(memory.runtimeBytes),
        step.stages[s].peakInFlight);
  }
  fmt::format_to(
      out, "device memory {}{}: {}\n", planner::formatBytes(estimate.cluster.device.memoryBytes),
      estimate.memoryMarginBytes > 0
          ? fmt::format(", {} kept free", planner::formatBytes(estimate.memoryMarginBytes))
          : "",
      estimate.fits() ? "every stage fits" : "DOES NOT FIT");
  const size_t fullest = estimate.fullestStage();
  if (fullest < estimate.peakBands.size() &&
      estimate.peakBands[fullest].lowBytes < estimate.peakBands[fullest].highBytes) {
    const planner::MemoryBand& band = estimate.peakBands[fullest];
    fmt::format_to(
        out, "memory band {} - {} (stage {}, the measured error of its transient part): {}{}\n",
        planner::formatBytes(band.lowBytes), planner::formatBytes(band.highBytes), fullest,
        planner::memoryVerdictName(estimate.verdict()),
        estimate.memoryPolicy == ir::MemoryPolicy::kSafe ? " (--memory-policy safe)" : "");
  }
  if (placement) {
    for (size_t k = 0; k < placement->layers.size(); ++k) {
      fmt::format_to(out, "placed {} layers [{}], recomputed [{}]\n",
                     k + 1 < placement->layers.size() ? "ViT" : "LLM",
                     fmt::join(placement->layers[k], ", "),
                     fmt::join(placement->recomputed[k], ", "));
    }
  }
  if (screen) {
    const auto peak = static_cast<double>(estimate.evaluated.estimate.peakMemory().total());
    fmt::format_to(out, "closed form      step {} ({:+.1f}%), peak {} ({:+.1f}%)\n",
                   planner::formatSeconds(screen->stepSeconds),
                   100 * (screen->stepSeconds / estimate.stepSeconds - 1),
                   planner::formatBytes(screen->peak()),
                   100 * (static_cast<double>(screen->peak()) / peak - 1));
  }
  return text;
}

}  // namespace autopar::exporters
