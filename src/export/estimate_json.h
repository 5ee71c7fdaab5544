#pragma once
/// \file
/// `autopar estimate --json`: one configuration, its step-time parts, throughput, FLOP/s and
/// memory per stage, for scripts (bench/calibration.py reads it).

#include <nlohmann/json.hpp>

#include "planner/configuration_estimate.h"

namespace autopar::exporters {

nlohmann::json estimateJson(const planner::MegatronConfig& config,
                            const planner::ConfigEstimate& estimate);

}  // namespace autopar::exporters
