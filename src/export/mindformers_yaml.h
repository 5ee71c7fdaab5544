#pragma once
/// \file
/// The parallel part of a MindFormers run yaml (docs/mindformers-yaml.md): parallel_config and
/// recompute_config, as `autopar plan --config` reads them back.

#include <cstdint>
#include <string>

#include "planner/configuration_estimate.h"

namespace autopar::exporters {

std::string mindformersParallelConfig(const planner::MegatronConfig& config, int64_t microBatches);

}  // namespace autopar::exporters
