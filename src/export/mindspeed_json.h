#pragma once
/// \file
/// MindSpeed-MM's auto_parallel_search_optimal_config.json (seed 003): parallel_config,
/// layer_placement, layer_recompute, e2e_time (ms) and throughput (tokens per second per device).
/// parallel_config holds the seed's PP, TP, DP and MBS, then what the search also chose: CP, EP,
/// VPP, SP (sequence parallelism), ZeRO (0-3), schedule (1f1b, interleaved, zb-h1) and recompute
/// (none, selective, full). layer_recompute keeps the seed's convention: a count per stage but the
/// last (every stage's when the last one recomputes), the first layers of each stage recomputed in
/// full.

#include <cstdint>
#include <nlohmann/json.hpp>

#include "ir/training_setup.h"

namespace autopar::exporters {

/// The file for `config` with its layers per stage (`llm`, and `vision` for a vision tower: zeros
/// without one), the sequence it trains, its world size and its step time.
nlohmann::ordered_json mindspeedOptimalConfig(const ir::TrainingSetup& config,
                                              const ir::StageLayers& llm,
                                              const ir::StageLayers& vision, int64_t sequence,
                                              int64_t worldSize, double stepSeconds);

}  // namespace autopar::exporters
