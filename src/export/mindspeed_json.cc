#include "export/mindspeed_json.h"

namespace autopar::exporters {

namespace {

/// Seed 003's layer_recompute: a count per stage but the last, which holds one micro-batch in
/// flight and recomputes nothing (its Qwen2-VL-72B example: 8 stages, 7 counts). When the last
/// stage does recompute, every stage's count is kept, so nothing is lost.
std::vector<int64_t> seedRecompute(std::vector<int64_t> counts) {
  if (!counts.empty() && counts.back() == 0) counts.pop_back();
  return counts;
}

}  // namespace

nlohmann::ordered_json mindspeedOptimalConfig(const planner::MegatronConfig& config,
                                              const planner::ConfigEstimate& estimate,
                                              double stepSeconds) {
  const auto [layers, recomputed] = planner::layersPerStage(estimate, config.pp, "llm");
  const auto [vision, visionRecomputed] = planner::layersPerStage(estimate, config.pp, "vit");
  return {{"parallel_config",
           {{"PP", config.pp},
            {"TP", config.tp},
            {"DP", config.dp},
            {"MBS", config.mbs},
            {"CP", config.cp},
            {"EP", config.ep},
            {"VPP", config.vpp},
            {"SP", config.sequenceParallel},
            {"ZeRO", config.zero},
            {"schedule", std::string(ir::scheduleName(config.schedule))},
            {"recompute", std::string(ir::recomputeName(config.recompute))}}},
          {"layer_placement", {{"vit_layer_placement", vision}, {"llm_layer_placement", layers}}},
          {"layer_recompute",
           {{"vit_layer_recompute", seedRecompute(visionRecomputed)},
            {"llm_layer_recompute", seedRecompute(recomputed)}}},
          {"e2e_time", stepSeconds * 1e3},
          {"throughput", static_cast<double>(config.gbs * estimate.sequence) / stepSeconds /
                             static_cast<double>(estimate.worldSize)}};
}

}  // namespace autopar::exporters
