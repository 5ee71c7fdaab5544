#pragma once
/// \file
/// The report `autopar estimate` prints for one configuration: the configuration, who sharded
/// the blocks (with --op-search), the step time's parts, throughput, FLOP/s and MFU, and one
/// memory row per pipeline stage.

#include <string>

#include "planner/configuration/configuration_estimate.h"
#include "search/layer_level/analytic_step.h"
#include "search/layer_level/layer_placement.h"

namespace autopar::exporters {

/// `placement` adds a line per stack with its layers and recomputed layers per stage; `screen`
/// a line with the closed form's step and peak against the full model's.
std::string formatEstimateReport(const planner::MegatronConfig& config,
                                 const planner::ConfigEstimate& estimate,
                                 const search::Placement* placement = nullptr,
                                 const search::AnalyticEstimate* screen = nullptr);

}  // namespace autopar::exporters
