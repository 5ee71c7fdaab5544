#pragma once
/// \file
/// MindSpeed-MM's auto_parallel_search_optimal_config.json (seed 003): parallel_config,
/// layer_placement, layer_recompute, e2e_time (ms) and throughput (tokens per second per device).

#include <nlohmann/json.hpp>

#include "planner/configuration_estimate.h"

namespace autopar::exporters {

/// The file for `config` as `estimate` evaluated it, with its step time; without a vision tower
/// the ViT lists are zeros.
nlohmann::ordered_json mindspeedOptimalConfig(const planner::MegatronConfig& config,
                                              const planner::ConfigEstimate& estimate,
                                              double stepSeconds);

}  // namespace autopar::exporters
