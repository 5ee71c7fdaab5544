#pragma once
/// \file
/// `--mem-coeff auto` (a run yaml's `mem_coeff: auto`): the double-recursive search's smallest
/// mem_coeff whose plan fits; `--mem-coeff fastest`: the one whose plan, among those that fit, is
/// fastest (every rung of a climb planned, then every plan between the search's change points
/// in the climb that fits, FastestClimb). Seed 000 suggests changing mem_coeff by factors of 4,
/// so the ladder is 0.1 x 4^k (0.1, 0.4, 1.6, ... 6553.6). When no rung fits alone, the ladder is
/// climbed again with optimizer parallel on, then with full recompute too, then with the
/// optimizer-parallel gathers recomputed as well: the memory levers MindFormers' own run yamls
/// turn on (`enable_parallel_optimizer: True`, `recompute: True`,
/// `parallel_optimizer_comm_recompute: True`); a lever the plan already has stays as it is.
///   chooseMemCoeff(llama2-70b on 128 nodes) -> mem_coeff 0.4 with optimizer parallel and full
///   recompute: no rung fits alone or with optimizer parallel alone, nor 0.1 with both

#include <functional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "planner/plan_evaluation.h"
#include "util/expected.h"

namespace autopar::planner {

struct MemCoeffChoice {
  PlanOptions options;  ///< with the chosen mem_coeff and levers
  Evaluated evaluated;  ///< its plan
  bool fits = false;    ///< false: nothing fitted; `evaluated` is the leanest plan
  /// The flags the choice adds to the command ("--mem-coeff", "1.6", "--optimizer-parallel").
  std::vector<std::string> flags;
  /// One line for the report: "mem_coeff auto: 0.4 with --optimizer-parallel --recompute full (20
  /// plans): step 14.659 s, peak 79.08 GiB of 80.00 GiB; without a lever the least any mem_coeff
  /// needs is 138.43 GiB".
  std::string summary;
};

/// How `fastest` climbs: the ladder, then, in the first climb where a rung fits, every plan the
/// search makes between its change points (the fastest plan often lies between two rungs: on the
/// 2-layer LLaMA block over 8 devices it is at 1.01, faster than at the rungs 0.4 and 1.6, as
/// `autopar plan --config bench/llama_block.yaml --devices 8 --search recursive_programming
/// --mem-coeff M` shows); or the ladder alone (the fit advice, which plans many fixes).
enum class FastestClimb { kEveryPlan, kLadder };

/// The ladder's rungs, smallest first.
std::vector<double> memCoeffLadder();

/// Plans `options` at each rung until one fits (`options.memCoeffRule` kFastest: through the
/// climb in which one fits, keeping the fastest; kAuto or kGiven: the first that fits).
/// `progress` is called after each plan with the count so far. Errors: a search other than
/// recursive_programming (which has no mem_coeff), or the first plan's (bad input).
Expected<MemCoeffChoice> chooseMemCoeff(const PlanOptions& options, const cluster::Cluster& cluster,
                                        const std::function<void(int)>& progress = {},
                                        FastestClimb walk = FastestClimb::kEveryPlan);

}  // namespace autopar::planner
