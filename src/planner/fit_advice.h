#pragma once
/// \file
/// Fit advice: when a plan does not fit in device memory, autopar plans it again with each lever
/// the plan's mode allows (recompute, optimizer parallel, gradient-accumulation sharding,
/// pipeline stages, tensor parallelism, mem_coeff, and more nodes last) and with their
/// combinations, and keeps the fastest changes that fit. A double-recursive plan also gets
/// `--mem-coeff fastest`'s choice, which may pull three levers at once. Every fix is verified by
/// planning it.
///   adviseFit(options, cluster).fixes[0].flags == {"--pipeline-stages", "8",
///                                                   "--micro-batches", "16"}

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "plan/plan.h"
#include "planner/plan_evaluation.h"

namespace autopar::planner {

struct FitAdvice {
  /// At most kMaxFixes changes that fit, the fastest per sample first, as the plan JSON records
  /// them: the flags (which replace the same flags of the command and win over a run yaml), the
  /// same change as run-yaml keys, and the plan it makes.
  std::vector<plan::FixRecord> fixes;
  /// Without fixes: the constraint no change met, and by how much.
  std::string unmet;
};

inline constexpr size_t kMaxFixes = 3;
/// Re-plans per advice, all stages together: each plans the whole model once. A double-recursive
/// plan adds `--mem-coeff fastest`'s ladder (planner/mem_coeff_auto.h) to them.
inline constexpr int kMaxFitTrials = 48;

/// Called after each re-plan with the count so far.
using FitProgress = std::function<void(int planned)>;

/// The plan `options` asks for does not fit `cluster`: what would.
FitAdvice adviseFit(const PlanOptions& options, const cluster::Cluster& cluster,
                    const FitProgress& progress = {});

/// "--pipeline-stages 8 --micro-batches 16: step 10.2 s for 16 samples, peak 76.7 GiB (yaml:
/// parallel_config.pipeline_stage: 8, parallel_config.micro_batch_num: 16)".
std::string formatFix(const plan::FixRecord& fix);

/// The fix's run-yaml keys, "key: value" joined by ", " (empty for --nodes, which no key sets).
std::string fixYaml(const plan::FixRecord& fix);

}  // namespace autopar::planner
