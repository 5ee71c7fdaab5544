#pragma once
/// \file
/// `autopar estimate --json`: one configuration, its step-time parts, throughput, FLOP/s and
/// memory per stage, for scripts (bench/calibration.py reads it).

#include <nlohmann/json.hpp>

#include "planner/configuration/configuration_estimate.h"
#include "planner/configuration/estimate_advice.h"
#include "search/layer_level/analytic_step.h"
#include "search/layer_level/layer_placement.h"

namespace autopar::exporters {

/// `placement` (given or found by --place) adds layer_placement and layer_recompute; `screen`
/// (--closed-form) adds closed_form's step and peak; `fixes` (a configuration that does not fit)
/// adds the single changes that fit: each its `flags` (a list of words, as given on the command
/// line), `peak_memory_bytes` and `step_time_s`.
nlohmann::json estimateJson(const planner::MegatronConfig& config,
                            const planner::ConfigEstimate& estimate,
                            const search::Placement* placement = nullptr,
                            const search::AnalyticEstimate* screen = nullptr,
                            const std::vector<planner::FitChange>* fixes = nullptr);

}  // namespace autopar::exporters
