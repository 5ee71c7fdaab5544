#pragma once
/// \file
/// `autopar plan`'s steps behind one call, for the command line and any other caller: the
/// cluster, the run yaml's settings (when one is given), the plan (with mem_coeff chosen by
/// planning its ladder under --mem-coeff auto or fastest), the Plan value and, when it does not
/// fit, the fixes verified by planning them.
///   auto planned = planRequest(options);  // options.model = "gpt3-175b", nodes 8, --tp 8
///   planned->plan.estimate.fits == false; planned->advice->fixes[0].flags names the change

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cluster/cluster.h"
#include "plan/plan.h"
#include "planner/fit_advice.h"
#include "planner/plan_evaluation.h"
#include "util/expected.h"

namespace autopar::planner {

/// What a caller hears while planning: the steps that can take seconds.
struct PlanObserver {
  /// Called as such a step starts ("choosing mem_coeff (planning each rung)", "solving the ILP"
  /// with its time limit, "searching (sharding_propagation)"); what it returns is held until the
  /// step ends (a progress line that clears itself). May be empty.
  std::function<std::shared_ptr<void>(const std::string& step, double limitSeconds)> step;
  /// Plans made while looking for fixes that fit.
  FitProgress fixes;
};

struct PlannedRequest {
  cluster::Cluster cluster;  ///< with a run yaml's device-memory cap applied
  /// The options as planned: a run yaml's settings and the chosen mem_coeff rung's levers in.
  PlanOptions options;
  Evaluated evaluated;
  plan::Plan plan;  ///< with its fixes when it does not fit
  /// Set when the plan does not fit: the verified fixes, or what no change could meet.
  std::optional<FitAdvice> advice;
  /// Under --mem-coeff auto or fastest: the rung chosen and why, one line.
  std::string memCoeffNote;
};

/// Plans `options`. Errors are the first bad input met, one line each; a plan that does not fit
/// is a result, not an error.
Expected<PlannedRequest> planRequest(PlanOptions options, const PlanObserver& observer = {});

}  // namespace autopar::planner
