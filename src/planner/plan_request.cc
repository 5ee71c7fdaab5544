#include "planner/plan_request.h"

#include <fmt/format.h>

#include "ir/setting.h"
#include "planner/data_parallel_shares.h"
#include "planner/inputs.h"
#include "planner/mem_coeff_auto.h"
#include "planner/plan_assembly.h"
#include "planner/run_yaml.h"

namespace autopar::planner {

namespace {

std::shared_ptr<void> startStep(const PlanObserver& observer, const std::string& step,
                                double limitSeconds) {
  return observer.step ? observer.step(step, limitSeconds) : nullptr;
}

/// The plan of `planned.options`; under --mem-coeff auto or fastest, the rung chosen, whose
/// options replace the request's.
Status evaluateRequest(PlannedRequest& planned, const PlanObserver& observer) {
  PlanOptions& options = planned.options;
  if (options.memCoeffRule != frontend::MemCoeffRule::kGiven) {
    const auto step = startStep(observer, "choosing mem_coeff (planning each rung)", 0);
    auto choice = chooseMemCoeff(options, planned.cluster);
    if (!choice) return choice.error();
    options = std::move(choice->options);
    planned.memCoeffNote = std::move(choice->summary);
    planned.evaluated = std::move(choice->evaluated);
    return {};
  }
  std::shared_ptr<void> step;
  if (options.search == search::SearchMode::kIlp) {
    step = startStep(observer, "solving the ILP", options.ilpTimeLimit);
  } else if (options.search != search::SearchMode::kSemiAuto) {
    step = startStep(observer,
                     fmt::format("searching ({})", search::searchModeName(options.search)), 0);
  }
  auto evaluated = evaluate(options, planned.cluster, options.modelOptions);
  if (!evaluated) return evaluated.error();
  planned.evaluated = std::move(*evaluated);
  return {};
}

}  // namespace

Expected<PlannedRequest> planRequest(PlanOptions options, const PlanObserver& observer) {
  auto cluster = loadCluster(options.cluster, options.nodes, options.devices);
  if (!cluster) return cluster.error();
  if (!options.config.empty()) {
    auto config = applyRunYaml(options, cluster->numDevices);
    if (!config) return config.error();
    capDeviceMemory(options, *cluster);
    applyAutoPipeline(options, *config, *cluster);
  }
  if (options.model.empty()) {
    return Error{fmt::format("{}: required (or {} with a model)", ir::flag(Setting::kModel),
                             ir::flag(Setting::kConfig))};
  }
  PlannedRequest planned;
  planned.cluster = std::move(*cluster);
  planned.options = std::move(options);
  auto shared = applyShares(planned.options, planned.cluster);
  if (!shared) return shared.error();
  if (auto status = evaluateRequest(planned, observer); !status) return status.error();
  planned.plan = planOf(planned.evaluated, planned.options, planned.cluster);
  if (*shared) {
    if (auto status = recordShares(planned.plan, **shared, planned.options, planned.cluster);
        !status) {
      return status.error();
    }
  }
  if (!planned.plan.estimate.fits) {
    planned.advice = adviseFit(planned.options, planned.cluster, observer.fixes);
    planned.plan.fixes = planned.advice->fixes;
  }
  return planned;
}

}  // namespace autopar::planner
