#include "export/mindspeed_json.h"

namespace autopar::exporters {

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
            {"VPP", config.vpp}}},
          {"layer_placement", {{"vit_layer_placement", vision}, {"llm_layer_placement", layers}}},
          {"layer_recompute",
           {{"vit_layer_recompute", visionRecomputed}, {"llm_layer_recompute", recomputed}}},
          {"e2e_time", stepSeconds * 1e3},
          {"throughput", static_cast<double>(config.gbs * estimate.sequence) / stepSeconds /
                             static_cast<double>(estimate.worldSize)}};
}

}  // namespace autopar::exporters
