// Schedules as action lists. 1F1B and interleaved 1F1B share one shape: `warmup` forwards, then
// (forward, backward) pairs until the forwards run out, then the remaining backwards. They differ
// only in the warmup length and in which (micro-batch, chunk) a step index names (stepAction).

#include "sim/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace autopar::sim {

namespace {

StageSchedule gpipeStage(const PipelineShape& shape) {
  StageSchedule actions;
  for (int microBatch = 0; microBatch < shape.microBatches; ++microBatch) {
    actions.push_back({Action::kForward, microBatch, 0});
  }
  for (int microBatch = 0; microBatch < shape.microBatches; ++microBatch) {
    actions.push_back({Action::kBackward, microBatch, 0});
  }
  return actions;
}

/// The action of forward or backward step `step` of a stage, in Megatron-LM's order
/// (schedules.py, get_model_chunk_id): steps go in groups of p micro-batches, each group through
/// chunk 0..v-1 forward and v-1..0 backward. With v == 1 step k is simply micro-batch k.
Action stepAction(const PipelineShape& shape, Action::Kind kind, int step) {
  const int stepsPerGroup = shape.stages * shape.virtualStages;
  const int microBatch = step / stepsPerGroup * shape.stages + step % shape.stages;
  const int chunkInOrder = step % stepsPerGroup / shape.stages;
  const int chunk =
      kind == Action::kForward ? chunkInOrder : shape.virtualStages - 1 - chunkInOrder;
  return {kind, microBatch, chunk};
}

/// Forwards a stage runs before its first backward. Stage s of 1F1B waits for the p-s-1
/// micro-batches ahead of it to reach the last stage. The interleaved schedule adds a round of
/// p forwards per extra chunk and doubles the distance to the last stage (Megatron-LM).
int warmupSteps(const PipelineShape& shape, int stage) {
  const int totalSteps = shape.microBatches * shape.virtualStages;
  const int laterStages = shape.stages - stage - 1;
  if (shape.schedule != ScheduleKind::kInterleaved) return std::min(laterStages, totalSteps);
  return std::min(laterStages * 2 + (shape.virtualStages - 1) * shape.stages, totalSteps);
}

StageSchedule oneForwardOneBackwardStage(const PipelineShape& shape, int stage) {
  const int totalSteps = shape.microBatches * shape.virtualStages;
  const int warmup = warmupSteps(shape, stage);
  StageSchedule actions;
  for (int step = 0; step < warmup; ++step) {
    actions.push_back(stepAction(shape, Action::kForward, step));
  }
  for (int step = 0; step + warmup < totalSteps; ++step) {
    actions.push_back(stepAction(shape, Action::kForward, step + warmup));
    actions.push_back(stepAction(shape, Action::kBackward, step));
  }
  for (int step = totalSteps - warmup; step < totalSteps; ++step) {
    actions.push_back(stepAction(shape, Action::kBackward, step));
  }
  return actions;
}

Status validateInterleaved(const PipelineShape& shape) {
  if (shape.virtualStages < 2) {
    return Error{fmt::format(
        "virtual_stages: the interleaved schedule needs at least 2 model chunks per stage, got {}",
        shape.virtualStages)};
  }
  if (shape.stages < 2) {
    return Error{"stages: the interleaved schedule needs at least 2 pipeline stages, got 1"};
  }
  if (shape.microBatches % shape.stages != 0) {
    return Error{fmt::format(
        "micro_batches: {} is not a multiple of the {} pipeline stages, which the interleaved "
        "schedule needs",
        shape.microBatches, shape.stages)};
  }
  return {};
}

/// Checks one stage's list: each (micro-batch, chunk) forward and backward once, in that order.
Status checkStage(const PipelineShape& shape, const StageSchedule& actions) {
  const int units = shape.microBatches * shape.virtualStages;
  std::vector<int> forwardRuns(units, 0);
  std::vector<int> backwardRuns(units, 0);
  for (const Action& action : actions) {
    if (action.microBatch < 0 || action.microBatch >= shape.microBatches || action.chunk < 0 ||
        action.chunk >= shape.virtualStages) {
      return Error{fmt::format("{} is out of range ({} micro-batches, {} chunks)",
                               actionName(action), shape.microBatches, shape.virtualStages)};
    }
    const int unit = action.chunk * shape.microBatches + action.microBatch;
    std::vector<int>& runs = action.kind == Action::kForward ? forwardRuns : backwardRuns;
    if (++runs[unit] > 1) return Error{fmt::format("{} runs twice", actionName(action))};
    if (action.kind == Action::kBackward && forwardRuns[unit] == 0) {
      const Action forward{Action::kForward, action.microBatch, action.chunk};
      return Error{fmt::format("{} runs before {}", actionName(action), actionName(forward))};
    }
  }
  for (int unit = 0; unit < units; ++unit) {
    const int chunk = unit / shape.microBatches;
    const int microBatch = unit % shape.microBatches;
    if (forwardRuns[unit] == 0 || backwardRuns[unit] == 0) {
      const Action missing{forwardRuns[unit] == 0 ? Action::kForward : Action::kBackward,
                           microBatch, chunk};
      return Error{fmt::format("{} never runs", actionName(missing))};
    }
  }
  return {};
}

}  // namespace

Status validateShape(const PipelineShape& shape) {
  const std::array<std::pair<std::string_view, int>, 3> counts = {{
      {"stages", shape.stages},
      {"micro_batches", shape.microBatches},
      {"virtual_stages", shape.virtualStages},
  }};
  for (const auto& [field, value] : counts) {
    if (value < 1) return Error{fmt::format("{}: expected at least 1, got {}", field, value)};
  }
  if (shape.schedule == ScheduleKind::kInterleaved) return validateInterleaved(shape);
  if (shape.virtualStages != 1) {
    return Error{fmt::format(
        "virtual_stages: {} model chunks per stage need the interleaved schedule, not {}",
        shape.virtualStages, ir::scheduleName(shape.schedule))};
  }
  return {};
}

Expected<Schedule> buildSchedule(const PipelineShape& shape) {
  if (Status valid = validateShape(shape); !valid) return valid.error();
  Schedule schedule;
  for (int stage = 0; stage < shape.stages; ++stage) {
    schedule.push_back(shape.schedule == ScheduleKind::kGPipe
                           ? gpipeStage(shape)
                           : oneForwardOneBackwardStage(shape, stage));
  }
  return schedule;
}

Status checkSchedule(const PipelineShape& shape, const Schedule& schedule) {
  if (static_cast<int>(schedule.size()) != shape.stages) {
    return Error{
        fmt::format("schedule: expected {} stages, got {}", shape.stages, schedule.size())};
  }
  for (int stage = 0; stage < shape.stages; ++stage) {
    if (Status valid = checkStage(shape, schedule[stage]); !valid) {
      return valid.error().in(fmt::format("stage {}", stage));
    }
  }
  return {};
}

std::string actionName(const Action& action) {
  const char kind = action.kind == Action::kForward ? 'F' : 'B';
  if (action.chunk == 0) return fmt::format("{}{}", kind, action.microBatch);
  return fmt::format("{}{}.{}", kind, action.microBatch, action.chunk);
}

std::string describeStage(const StageSchedule& actions) {
  std::string text;
  for (const Action& action : actions) {
    if (!text.empty()) text += ' ';
    text += actionName(action);
  }
  return text;
}

}  // namespace autopar::sim
