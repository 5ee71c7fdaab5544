#pragma once
/// \file
/// MindSpeed-MM's auto_parallel_search_optimal_config.json (seed 003): parallel_config,
/// layer_placement, layer_recompute, e2e_time (ms) and throughput (tokens per second per device).
/// parallel_config holds the seed's PP, TP, DP and MBS, then what the search also chose: CP, EP,
/// VPP, SP (sequence parallelism), ZeRO (0-3), schedule (1f1b, interleaved, zb-h1) and recompute
/// (none, selective, full). layer_recompute keeps the seed's convention: a count per stage but the
/// last (every stage's when the last one recomputes), the first layers of each stage recomputed in
/// full.

#include <nlohmann/json.hpp>

#include "planner/configuration_estimate.h"

namespace autopar::exporters {

/// The file for `config` as `estimate` evaluated it, with its step time; without a vision tower
/// the ViT lists are zeros.
nlohmann::ordered_json mindspeedOptimalConfig(const planner::MegatronConfig& config,
                                              const planner::ConfigEstimate& estimate,
                                              double stepSeconds);

}  // namespace autopar::exporters
