/// `autopar estimate`: one Megatron-style configuration's step time, throughput, FLOPs and memory
/// per pipeline stage, without a search (cli/megatron_estimate.h).

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/block_profile.h"
#include "cli/megatron_estimate.h"
#include "cli/verbs.h"

namespace autopar::cli {

namespace {

nlohmann::json estimateJson(const MegatronConfig& config, const ConfigEstimate& estimate) {
  const auto& step = estimate.evaluated.estimate;
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < step.stages.size(); ++s) {
    const auto& memory = step.stages[s].memory;
    stages.push_back({{"stage", s},
                      {"peak_memory_bytes", memory.total()},
                      {"parameters_bytes", memory.parameterBytes},
                      {"gradients_bytes", memory.gradientBytes},
                      {"optimizer_bytes", memory.optimizerBytes},
                      {"activations_bytes", memory.activationBytes},
                      {"communication_bytes", memory.communicationBytes},
                      {"peak_in_flight", step.stages[s].peakInFlight}});
  }
  return {{"model", config.model},
          {"cluster", estimate.cluster.name},
          {"devices", estimate.worldSize},
          {"parallel_config",
           {{"TP", config.tp},
            {"PP", config.pp},
            {"DP", config.dp},
            {"CP", config.cp},
            {"EP", config.ep},
            {"VPP", config.vpp},
            {"MBS", config.mbs},
            {"GBS", config.gbs},
            {"micro_batches", estimate.microBatches},
            {"sequence_parallel", config.sequenceParallel},
            {"recompute", config.recompute},
            {"zero", config.zero},
            {"precision", config.precision}}},
          {"step_time_s", estimate.stepSeconds},
          {"tokens_per_s", estimate.tokensPerSecond},
          {"tflops_per_gpu", estimate.tflopsPerGpu},
          {"hardware_tflops_per_gpu", estimate.hardwareTflopsPerGpu},
          {"mfu", estimate.mfu},
          {"compute_s", step.computeSeconds},
          {"exposed_communication_s", step.exposedCommunicationSeconds},
          {"bubble_s", step.bubbleSeconds},
          {"optimizer_s", step.optimizerSeconds},
          {"peak_memory_bytes", estimate.peakMemoryBytes},
          {"device_memory_bytes", estimate.cluster.device.memoryBytes},
          {"fits", estimate.fits()},
          {"stages", stages}};
}

/// Which stage overflows, by how much, and its largest part, with the flags that shrink it.
std::string overflowMessage(const ConfigEstimate& estimate) {
  const auto& step = estimate.evaluated.estimate;
  const auto& memory = step.peakMemory();
  const std::pair<const char*, int64_t> parts[] = {
      {"parameters", memory.parameterBytes},
      {"gradients", memory.gradientBytes},
      {"optimizer states", memory.optimizerBytes},
      {"activations", memory.activationBytes},
      {"communication buffers and gathered parameters", memory.communicationBytes}};
  const auto* largest = &parts[0];
  for (const auto& part : parts) {
    if (part.second > largest->second) largest = &part;
  }
  return fmt::format(
      "does not fit: stage {} needs {} of {} device memory, {} {} the largest part; --zero 1-3 "
      "shards optimizer states (and gradients, parameters), --recompute selective or full cuts "
      "activations, a larger --tp or --pp splits everything",
      step.peakStage, formatBytes(memory.total()), formatBytes(estimate.cluster.device.memoryBytes),
      largest->first, formatBytes(largest->second));
}

}  // namespace

void addEstimateVerb(CLI::App& app, Action& action) {
  CLI::App* verb = app.add_subcommand(
      "estimate",
      "Estimate one Megatron-style configuration without searching: step time, tokens/s, model "
      "TFLOP/s per GPU, MFU and memory per pipeline stage");
  auto config = std::make_shared<MegatronConfig>();
  auto json = std::make_shared<bool>(false);
  auto costModel = std::make_shared<std::string>();
  addConfigurationOptions(*verb, *config, *costModel);
  verb->add_option("--tp", config->tp, "tensor-parallel degree")->check(CLI::PositiveNumber);
  verb->add_option("--pp", config->pp, "pipeline stages")->check(CLI::PositiveNumber);
  verb->add_option("--dp", config->dp, "data-parallel degree")
      ->required()
      ->check(CLI::PositiveNumber);
  verb->add_option("--cp", config->cp, "context-parallel degree (only 1 so far)")
      ->check(CLI::PositiveNumber);
  verb->add_option("--ep", config->ep, "expert-parallel degree (only 1 so far)")
      ->check(CLI::PositiveNumber);
  verb->add_option("--vpp", config->vpp, "virtual stages per pipeline stage (interleaved)")
      ->check(CLI::PositiveNumber);
  verb->add_option("--mbs", config->mbs, "micro-batch size per data-parallel replica")
      ->check(CLI::PositiveNumber);
  verb->add_flag("--sequence-parallel", config->sequenceParallel, "Megatron-LM sequence parallel");
  verb->add_option("--recompute", config->recompute, "none | selective | full")
      ->capture_default_str();
  verb->add_option("--zero", config->zero, "0 | 1 | 2 | 3 (distributed optimizer)")
      ->capture_default_str();
  verb->add_flag("--json", *json, "print JSON");
  auto closedForm = std::make_shared<bool>(false);
  verb->add_flag("--closed-form", *closedForm,
                 "also give the search's closed-form estimate (its screen) of this configuration");
  verb->callback([&action, config, json, costModel, closedForm] {
    action = [config, json, costModel, closedForm] {
      if (auto status = applyCostModel(*costModel); !status) return reportError(status.error());
      auto estimate = estimateConfig(*config);
      if (!estimate) return reportError(estimate.error());
      std::optional<search::AnalyticEstimate> screen;
      if (*closedForm) {
        auto transformer = config->transformer
                               ? Expected<frontend::TransformerConfig>(*config->transformer)
                               : transformerConfigOf(config->model);
        if (!transformer) return reportError(transformer.error());
        BlockProfiler profiler(*config, *transformer);
        // The layers as the full model splits them by default: evenly over the stages.
        auto closed =
            closedFormEstimate(*config, profiler, estimate->cluster,
                               search::evenLayers(profiler.stacks(), config->pp, config->vpp));
        if (!closed) return reportError(closed.error());
        screen = *closed;
      }
      if (*json) {
        nlohmann::json out = estimateJson(*config, *estimate);
        if (screen) {
          out["closed_form"] = {{"step_time_s", screen->stepSeconds},
                                {"peak_memory_bytes", screen->peakBytes}};
        }
        fmt::print("{}\n", out.dump(2));
      } else {
        printEstimateReport(*config, *estimate);
        if (screen) {
          fmt::print(
              "closed form      step {} ({:+.1f}%), peak {} ({:+.1f}%)\n",
              formatSeconds(screen->stepSeconds),
              100 * (screen->stepSeconds / estimate->stepSeconds - 1), formatBytes(screen->peak()),
              100 * (static_cast<double>(screen->peak()) /
                         static_cast<double>(estimate->evaluated.estimate.peakMemory().total()) -
                     1));
        }
      }
      if (estimate->fits()) return kExitOk;
      fmt::print(stderr, "autopar: {}\n", overflowMessage(*estimate));
      return kExitDoesNotFit;
    };
  });
}

}  // namespace autopar::cli
