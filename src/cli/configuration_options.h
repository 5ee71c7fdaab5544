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

/// The flags of those options that the planner takes as values, not strings.
struct ConfigurationFlags {
  std::string costModel;              ///< --cost-model: a constants file, empty for the built-in
  std::string opSearch = "megatron";  ///< --op-search
};

/// The options `autopar estimate` and `autopar search` share: --model, --cluster, --nodes,
/// --gbs, --seq, --precision, --inter-node-gbps, --cost-model and --op-search.
void addConfigurationOptions(CLI::App& verb, planner::MegatronConfig& config,
                             ConfigurationFlags& flags);

/// Puts the flags in force: the cost model's constants, and the op-level search in `config`.
Status applyConfigurationFlags(const ConfigurationFlags& flags, planner::MegatronConfig& config);

}  // namespace autopar::cli
