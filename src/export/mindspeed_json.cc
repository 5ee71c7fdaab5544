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

nlohmann::ordered_json mindspeedOptimalConfig(const ir::TrainingSetup& config,
                                              const ir::StageLayers& llm,
                                              const ir::StageLayers& vision, int64_t sequence,
                                              int64_t worldSize, double stepSeconds) {
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
          {"layer_placement",
           {{"vit_layer_placement", vision.layers}, {"llm_layer_placement", llm.layers}}},
          {"layer_recompute",
           {{"vit_layer_recompute", seedRecompute(vision.recomputed)},
            {"llm_layer_recompute", seedRecompute(llm.recomputed)}}},
          {"e2e_time", stepSeconds * 1e3},
          {"throughput", static_cast<double>(config.gbs * sequence) / stepSeconds /
                             static_cast<double>(worldSize)}};
}

}  // namespace autopar::exporters
