#pragma once
/// \file
/// What `autopar estimate` and `autopar search` share on the command line: the options that set a
/// planner::MegatronConfig's model, cluster, batch, cost model and op-level search.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cost/framework.h"
#include "planner/configuration/configuration_estimate.h"

namespace autopar::cli {

/// The flags of those options that the planner takes as values, not strings.
struct ConfigurationFlags {
  std::string costModel;              ///< --cost-model: a constants file, empty for the built-in
  std::string opSearch = "megatron";  ///< --op-search
  std::string framework;              ///< empty: the cluster's default (cost::defaultFramework)
  double memoryMarginGib = 0;         ///< --memory-margin
  std::string optimizerState;         ///< --optimizer-state; empty: the framework's
  /// Changes to the framework's code path, one per cost::codePathSwitches() entry: CLI11 counts
  /// --overlap-grad-reduce as +1 and --no-overlap-grad-reduce as -1, so 0 keeps the profile's
  /// setting.
  std::vector<int> codePathSwitches = std::vector<int>(cost::codePathSwitches().size(), 0);
  std::string attention;  ///< flash | cudnn | unfused; empty: the profile's
  std::string loss;       ///< fp32 | fused; empty: the profile's
};

/// The options `autopar estimate` and `autopar search` share: --model, --cluster, --nodes,
/// --gbs, --seq, --precision, --inter-node-gbps, --cost-model, --op-search, --framework and the
/// code-path switches.
void addConfigurationOptions(CLI::App& verb, planner::MegatronConfig& config,
                             ConfigurationFlags& flags);

/// Puts the flags in force: the cost model's constants, and in `config` the op-level search, the
/// framework and its code path with the switches given.
/// --memory-policy expected | safe, written into `policy` (which must outlive the parse).
void addMemoryPolicyOption(CLI::App& verb, ir::MemoryPolicy& policy);

Status applyConfigurationFlags(const ConfigurationFlags& flags, planner::MegatronConfig& config);

}  // namespace autopar::cli
