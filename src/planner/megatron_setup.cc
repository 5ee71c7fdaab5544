#include "planner/megatron_setup.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>

#include "ir/setting.h"
#include "layout/strategy.h"
#include "planner/inputs.h"
#include "planner/plan_assembly.h"

namespace autopar::planner {

namespace {

/// How far one degree's annotation agrees with the plan, op by op in graph order.
struct Agreement {
  ir::ParallelConfig degrees;  ///< tp, dp, sequence parallel
  size_t agreeing = 0;         ///< annotated ops before the first that differs
  /// The first annotated op the plan cuts otherwise, with Megatron's cuts and the plan's.
  std::optional<std::string> different;
  layout::Strategy megatronCuts;
  layout::Strategy plannedCuts;
};

/// The plan's cuts by op name.
using PlannedCuts = std::map<std::string, const layout::Strategy*>;

Expected<Agreement> agreementOf(const PlannedCuts& planned, const PlanOptions& options,
                                const ir::ParallelConfig& degrees, int64_t stageDevices) {
  ModelOptions annotated = options.modelOptions;
  annotated.parallel = degrees;
  annotated.dataParallelFromDevices = true;
  annotated.annotate = true;
  auto model = loadModel(options.model, annotated, stageDevices);
  if (!model) return model.error();
  Agreement agreement;
  agreement.degrees = model->parallel.value_or(degrees);
  for (const ir::Op& op : model->graph.ops()) {
    if (op.shard.empty()) continue;
    const auto found = planned.find(op.name);
    if (found == planned.end() || *found->second != op.shard) {
      agreement.different = op.name;
      agreement.megatronCuts = op.shard;
      if (found != planned.end()) agreement.plannedCuts = *found->second;
      break;
    }
    ++agreement.agreeing;
  }
  return agreement;
}

}  // namespace

Status withMegatronSetup(plan::Plan& plan, const PlanOptions& options, int64_t graphBatch) {
  if (plan.setup) return {};
  if (isGraphModel(options.model)) {
    return Error{fmt::format(
        "{} is an operator graph: Megatron-LM's arguments describe a transformer it builds "
        "(--mindspore-strategy writes any plan's shardings)",
        options.model)};
  }
  const int64_t stageDevices =
      plan.ranks.empty() ? plan.devices : static_cast<int64_t>(plan.ranks.size());
  PlannedCuts planned;
  for (const plan::OpRecord& op : plan.ops) planned[op.name] = &op.strategy;
  std::optional<Agreement> closest;
  for (int64_t tp = 1; tp <= stageDevices; ++tp) {
    if (stageDevices % tp != 0) continue;
    for (const bool sequenceParallel : {false, true}) {
      if (sequenceParallel && tp == 1) continue;
      auto agreement = agreementOf(
          planned, options, ir::ParallelConfig{.tp = tp, .sequenceParallel = sequenceParallel},
          stageDevices);
      // A degree the model cannot be annotated with (heads that do not divide) is no candidate.
      if (!agreement) continue;
      if (!agreement->different) {
        if (graphBatch % agreement->degrees.dp != 0) continue;
        plan.setup = setupOf(agreement->degrees, graphBatch / agreement->degrees.dp, plan, options);
        return {};
      }
      if (!closest || agreement->agreeing > closest->agreeing) closest = std::move(*agreement);
    }
  }
  if (!closest) {
    return Error{fmt::format("{} cannot be annotated Megatron-style on {} devices", options.model,
                             stageDevices)};
  }
  return Error{fmt::format(
      "op '{}' is cut {}, which no Megatron-LM tensor-parallel degree gives (TP {} cuts it {}); "
      "{} writes the plan's shardings",
      *closest->different,
      closest->plannedCuts.empty() ? "nowhere" : layout::strategyToString(closest->plannedCuts),
      closest->degrees.tp, layout::strategyToString(closest->megatronCuts),
      ir::flag(ir::Setting::kMindsporeStrategy))};
}

}  // namespace autopar::planner
