#pragma once
/// \file
/// What `autopar estimate` and `autopar search` share on the command line: the options that set a
/// planner::MegatronConfig's model, cluster, batch, cost model and op-level search.

#include <CLI/CLI.hpp>
#include <string>

#include "planner/configuration_estimate.h"

namespace autopar::cli {

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
