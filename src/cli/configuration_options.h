#pragma once
/// \file
/// What `autopar estimate` and `autopar search` share on the command line: the options that set a
/// planner::MegatronConfig's model, cluster and batch, and the estimate's report.

#include <CLI/CLI.hpp>
#include <string>

#include "planner/configuration_estimate.h"

namespace autopar::cli {

/// The report `autopar estimate` prints: configuration, step-time parts, throughput, FLOP/s and
/// one memory row per stage.
void printEstimateReport(const planner::MegatronConfig& config,
                         const planner::ConfigEstimate& estimate);

/// The options `autopar estimate` and `autopar search` share: --model, --cluster, --nodes,
/// --gbs, --seq, --precision, --inter-node-gbps and --cost-model.
void addConfigurationOptions(CLI::App& verb, planner::MegatronConfig& config,
                             std::string& costModel);

}  // namespace autopar::cli
