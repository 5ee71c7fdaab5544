#pragma once
/// \file
/// What makes a configuration that does not fit fit. Single changes to it (the next ZeRO stages,
/// recompute, gradients kept in bf16, twice the TP, PP or CP with half the DP, half the
/// micro-batch) are each estimated on the full model; those that fit are named, fastest first,
/// with the peak and step they were estimated at (LLaMA2-7B, TP 2 DP 4, ZeRO 1, 40 GiB kept free;
/// tests/cli/estimate.test):
///   "does not fit: stage 0 needs 41.04 GiB of 80.00 GiB device memory less 40.00 GiB kept free,
///    gradients 12.55 GiB the largest part; fits with --grad-reduce-in-bf16 (34.77 GiB, step
///    3.431 s), or --cp 2 --dp 2 (35.39 GiB, step 3.587 s), or --pp 2 --dp 2 (31.28 GiB, ...)"

#include <string>
#include <vector>

#include "planner/configuration/configuration_estimate.h"

namespace autopar::planner {

struct FitChange {
  std::string flags;  ///< "--tp 4 --dp 2"
  int64_t peakBytes = 0;
  double stepSeconds = 0;
};

/// The single changes to `config` that fit, fastest first, at most `most` of them.
std::vector<FitChange> changesThatFit(const MegatronConfig& config, size_t most = 3);

struct OverflowAdvice {
  /// Which stage overflows, by how much, its largest part, and the changes (or, when none fits,
  /// that none does and what to try): one line.
  std::string message;
  std::vector<FitChange> fixes;  ///< changesThatFit's, fastest first
};

/// For a configuration that does not fit: what overflows and the single changes that fit.
OverflowAdvice overflowAdvice(const ConfigEstimate& estimate, const MegatronConfig& config);

}  // namespace autopar::planner
