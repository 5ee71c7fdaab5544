#include "export/estimate_json.h"

#include <sstream>

namespace autopar::exporters {

nlohmann::json estimateJson(const planner::MegatronConfig& config,
                            const planner::ConfigEstimate& estimate,
                            const search::Placement* placement,
                            const search::AnalyticEstimate* screen,
                            const std::vector<planner::FitChange>* fixes) {
  const auto& step = estimate.evaluated.estimate;
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < step.stages.size(); ++s) {
    const auto& memory = step.stages[s].memory;
    stages.push_back(
        {{"stage", s},
         {"peak_memory_bytes", memory.total()},
         {"parameters_bytes", memory.parameterBytes},
         {"gradients_bytes", memory.gradientBytes},
         {"optimizer_bytes", memory.optimizerBytes},
         {"activations_bytes", memory.activationBytes},
         {"workspace_bytes", memory.workspaceBytes},
         {"communication_bytes", memory.communicationBytes},
         {"runtime_bytes", memory.runtimeBytes},
         {"transient_bytes",
          s < estimate.transientBytes.size() ? estimate.transientBytes[s] : int64_t{0}},
         {"peak_in_flight", step.stages[s].peakInFlight}});
  }
  nlohmann::json out = {
      {"model", config.model},
      {"cluster", estimate.cluster.name},
      {"framework", cost::frameworkLabel(config.framework, config.frameworkRelease)},
      {"devices", estimate.worldSize},
      {"parallel_config",
       {{"TP", config.tp},
        {"PP", config.pp},
        {"DP", config.dp},
        {"CP", config.cp},
        {"EP", config.ep},
        {"VPP", config.vpp},
        {"schedule", ir::scheduleName(config.schedule)},
        {"MBS", config.mbs},
        {"GBS", config.gbs},
        {"micro_batches", estimate.microBatches},
        {"sequence_parallel", config.sequenceParallel},
        {"recompute", ir::recomputeName(config.recompute)},
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
  nlohmann::json bands = nlohmann::json::array();
  for (const planner::MemoryBand& band : estimate.peakBands) {
    bands.push_back({band.lowBytes, band.highBytes});
  }
  out["memory_band_bytes"] = std::move(bands);
  out["memory_verdict"] = planner::memoryVerdictName(estimate.verdict());
  out["memory_policy"] = estimate.memoryPolicy == ir::MemoryPolicy::kSafe ? "safe" : "expected";
  if (screen) {
    out["closed_form"] = {{"step_time_s", screen->stepSeconds},
                          {"peak_memory_bytes", screen->peakBytes}};
  }
  if (placement) {
    out["layer_placement"] = placement->layers;
    out["layer_recompute"] = placement->recomputed;
  }
  if (fixes) {
    nlohmann::json changes = nlohmann::json::array();
    for (const planner::FitChange& fix : *fixes) {
      nlohmann::json words = nlohmann::json::array();
      std::istringstream flags(fix.flags);
      for (std::string word; flags >> word;) words.push_back(word);
      changes.push_back({{"flags", std::move(words)},
                         {"peak_memory_bytes", fix.peakBytes},
                         {"step_time_s", fix.stepSeconds}});
    }
    out["fixes"] = std::move(changes);
  }
  return out;
}

}  // namespace autopar::exporters
