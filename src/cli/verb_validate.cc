/// `autopar validate`: check that a plan file fits a model and a device count, and that its
/// strategies apply to the model's ops.

#include <fmt/format.h>

#include <map>
#include <numeric>

#include "cli/verbs.h"
#include "plan/plan_json.h"
#include "plan/validate.h"
#include "planner/inputs.h"
#include "rules/graph_sharding.h"
#include "util/limits.h"

namespace autopar::cli {

namespace {

struct ValidateOptions {
  std::string planPath;
  std::string model;
  planner::ModelOptions modelOptions;
};

int runValidate(const ValidateOptions& options) {
  auto loaded = plan::readPlanFile(options.planPath);
  if (!loaded) return reportError(loaded.error());
  // The plan records the micro-batch and sequence it was made for; use them unless overridden.
  planner::ModelOptions modelOptions = options.modelOptions;
  if (modelOptions.microBatch == 0) modelOptions.microBatch = loaded->inputs.microBatch;
  if (modelOptions.sequence == 0) modelOptions.sequence = loaded->inputs.sequence;
  if (loaded->setup) {  // the annotation the plan was made with
    modelOptions.parallel = static_cast<const ir::ParallelConfig&>(*loaded->setup);
  }
  auto model = planner::loadModel(options.model, modelOptions, loaded->devices);
  if (!model) return reportError(model.error());
  if (auto status = plan::validatePlan(*loaded, model->graph, loaded->devices); !status) {
    return reportError(status.error().in(options.planPath));
  }
  std::map<std::string, layout::Strategy> strategies;
  for (const auto& op : loaded->ops) strategies[op.name] = op.strategy;
  std::vector<int> ranks(static_cast<size_t>(loaded->devices));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto sharded = rules::shardGraph(model->graph, ranks, strategies);
  if (!sharded) return reportError(sharded.error().in(options.planPath));
  fmt::print(verbOut(), "{}: valid plan for {} ({} ops, {} devices)\n", options.planPath,
             options.model, loaded->ops.size(), loaded->devices);
  const plan::EstimateRecord& estimate = loaded->estimate;
  if (estimate.deviceMemoryBytes == 0) return kExitOk;  // a plan without a costed estimate
  fmt::print(verbOut(), "  estimated peak {} of {} per device: {}\n",
             planner::formatBytes(estimate.peakMemoryBytes),
             planner::formatBytes(estimate.deviceMemoryBytes),
             estimate.fits ? "fits" : "DOES NOT FIT");
  if (estimate.fits) return kExitOk;
  fmt::print(verbErr(), "autopar: {}: valid, but does not fit in device memory\n",
             options.planPath);
  return kExitDoesNotFit;
}

}  // namespace

void addValidateVerb(CLI::App& app, Action& action) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* verb = app.add_subcommand("validate", "Check a plan file against a model");
  verb->add_option("plan", options->planPath, "plan JSON written by autopar plan --out")
      ->required();
  verb->add_option("--model", options->model, "the model the plan was made for")->required();
  verb->add_option("--micro-batch", options->modelOptions.microBatch, "micro-batch size")
      ->check(positiveAtMost(limits::kMaxMicroBatch));
  verb->add_option("--seq", options->modelOptions.sequence, "sequence length")
      ->check(positiveAtMost(limits::kMaxSequence));
  verb->callback([&action, options] { action = [options] { return runValidate(*options); }; });
}

}  // namespace autopar::cli
