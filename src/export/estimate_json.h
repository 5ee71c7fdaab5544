#pragma once
/// \file
/// `autopar estimate --json`: one configuration, its step-time parts, throughput, FLOP/s and
/// memory per stage, for scripts (bench/calibration.py reads it).

#include <nlohmann/json.hpp>

#include "planner/configuration/configuration_estimate.h"
#include "search/layer_level/analytic_step.h"
#include "search/layer_level/layer_placement.h"

namespace autopar::exporters {

/// `placement` (given or found by --place) adds layer_placement and layer_recompute; `screen`
/// (--closed-form) adds closed_form's step and peak.
nlohmann::json estimateJson(const planner::MegatronConfig& config,
                            const planner::ConfigEstimate& estimate,
                            const search::Placement* placement = nullptr,
                            const search::AnalyticEstimate* screen = nullptr);

}  // namespace autopar::exporters
