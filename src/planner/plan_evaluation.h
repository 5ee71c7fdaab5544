#pragma once
/// \file
/// What `autopar plan` evaluates: its options, and one evaluation of them (model, stage
/// assignment, operator search, cost report and step estimate).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/framework.h"
#include "cost/graph_cost.h"
#include "frontend/mindformers_yaml.h"
#include "ir/setting.h"
#include "planner/inputs.h"
#include "planner/memory_band.h"
#include "planner/op_search.h"
#include "planner/training_options.h"
#include "search/op_level/driver.h"
#include "search/op_level/pipeline.h"
#include "sim/step_estimate.h"
#include "util/expected.h"

namespace autopar::planner {

/// A setting a run yaml can give and the caller can too (a command-line flag, a Python keyword),
/// whose value then wins over the yaml's (planner/run_yaml.h): kTp, kSequenceParallel,
/// kPipelineStages, kMicroBatch(es), kSchedule, kVirtualStages, the recompute and optimizer
/// settings, kAllToAll, kSearch and kMemCoeff.
using Setting = ir::Setting;

/// The options of `autopar plan`, after a run yaml (if any) has set its part.
struct PlanOptions {
  std::string model;
  std::string cluster = "dgx-a100-80g";
  /// The constants the plan is priced with (cost/constants.h).
  cost::CostModel costModel = cost::shippedCostModel();
  int nodes = 1;
  int devices = 0;
  ModelOptions modelOptions;
  /// Strategies that override the annotation or the search, by op (--shard OP=STRATEGY).
  std::map<std::string, layout::Strategy> shards;
  /// MindSpore's operator-strategy JSON (frontend/mindspore_strategy.h) read as annotations, as
  /// --shard gives them; a --shard of the same op wins.
  std::string strategyFile;
  std::string out;
  std::string mindsporeStrategyOut;  ///< --mindspore-strategy: MindSpore's op-strategy JSON
  std::string megatronArgsOut;       ///< --megatron-args: Megatron-LM's arguments
  bool json = false;
  bool enableAllToAll = false;
  search::SearchMode search = search::SearchMode::kSemiAuto;
  bool explain = false;
  double memCoeff = 0.1;
  /// --mem-coeff auto or fastest: mem_coeff chosen by planning its ladder
  /// (planner/mem_coeff_auto.h).
  frontend::MemCoeffRule memCoeffRule = frontend::MemCoeffRule::kGiven;
  std::string config;      ///< a MindFormers-style run yaml
  std::string configNote;  ///< what the yaml set, printed with the report
  /// The device memory the framework may use (a run yaml's context.max_device_memory); 0: all of
  /// it. capDeviceMemory applies it to a loaded cluster.
  int64_t deviceMemoryCapBytes = 0;
  /// The training setup: pipeline stages, schedule and model chunks, layer recompute, the block
  /// placement, the framework and its code path, the optimizer state, fp8 parameters and the
  /// memory policy. Its parallel degrees and batch are the plan's once searched (planOf).
  ir::TrainingSetup setup;
  /// Whether setup.framework was named (--framework, a run yaml's `framework`): its profile's
  /// code path then prices the plan, which it must be able to run; unnamed, the plan is priced
  /// with its own features only, as the seeds describe MindSpore's.
  bool frameworkNamed = false;
  TrainingFlags training;
  double ilpTimeLimit = 60;   ///< --search ilp: seconds for CBC
  bool ilpTieLayers = false;  ///< --search ilp: one decision for the layers of each stack
  /// The settings the caller gave itself: a run yaml never overrides them.
  std::set<Setting> givenSettings;
  [[nodiscard]] bool given(Setting setting) const { return givenSettings.contains(setting); }
  /// An op-level search's sharding of each block (planner/op_search.h): every op takes its
  /// place's cuts, lifted over the stage's data-parallel ranks, instead of --search's choice.
  std::shared_ptr<const BlockSharding> blockSharding;
};

struct Evaluated {
  LoadedModel model;
  search::SearchOutcome outcome;
  cost::EvaluateOptions evaluateOptions;
  sim::PipelineShape pipeline;
  search::StageAssignment stages;
  cost::CostReport report;
  sim::StepEstimate estimate;
  int64_t devicesPerStage = 0;

  [[nodiscard]] int64_t peakBytes() const { return estimate.peakMemory().total(); }
  /// The fullest stage's memory band (planner/memory_band.h).
  [[nodiscard]] MemoryBand peakBand() const {
    return stageBand(estimate.peakMemory(), evaluateOptions.codePath, *evaluateOptions.costModel);
  }
  /// Whether the fullest stage fits `usableBytes` under `policy`.
  [[nodiscard]] bool fitsIn(int64_t usableBytes, ir::MemoryPolicy policy) const {
    return fitsUnder(policy, peakBytes(), peakBand(), usableBytes);
  }
};

/// The model evaluate() plans: built with `modelOptions` (and the named framework's attention
/// kernel) for one pipeline stage's devices; the plan features are not applied yet.
Expected<LoadedModel> loadPlannedModel(const PlanOptions& options, const cluster::Cluster& cluster,
                                       const ModelOptions& modelOptions);

/// Loads the model with `modelOptions`, applies the plan features, assigns stages, searches and
/// costs. Errors are the first bad input met, one line each.
Expected<Evaluated> evaluate(const PlanOptions& options, const cluster::Cluster& cluster,
                             const ModelOptions& modelOptions);

/// One micro-batch's forward FLOPs over the graph, and the part of them that recompute runs again
/// in backward (the ops with a recompute region, `recomputeRegionOf` >= 0; empty: none).
struct ForwardFlops {
  double total = 0;
  double recomputed = 0;
};
ForwardFlops forwardFlops(const ir::Graph& graph, const std::vector<int>& recomputeRegionOf);

/// As evaluate, for a model already loaded or built in code (a library user's graph, a test's
/// toy model): applies the plan features, assigns stages, searches, costs and simulates.
Expected<Evaluated> evaluateModel(LoadedModel model, const PlanOptions& options,
                                  const cluster::Cluster& cluster);

}  // namespace autopar::planner
