#pragma once
/// \file
/// Pipeline-parallel schedules: the ordered forward and backward actions each stage runs.
///
/// With p = 4 stages and m = 6 micro-batches, stage s runs (Fi/Bi = forward/backward of
/// micro-batch i; see describeStage):
///   gpipe (Huang et al. 2019)        F0 F1 F2 F3 F4 F5 B0 B1 B2 B3 B4 B5
///   1f1b (PipeDream-Flush), s = 0    F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5
///   1f1b (PipeDream-Flush), s = 3    F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5
/// 1F1B warms up with min(p-s-1, m) forwards, alternates one forward and one backward, then drains
/// the backwards; it keeps at most p-s micro-batches in flight where GPipe keeps m.
/// The interleaved schedule (Megatron-LM, Narayanan et al. 2021, Sec. 2.2) gives each stage v
/// model chunks; chunk c of stage s is virtual stage c*p + s, so a micro-batch visits
/// stage 0, 1, ..., p-1, then stage 0 again with chunk 1, and so on.
/// Zero-bubble H1 (Qi et al. 2023) splits each backward into B (input gradients, which the
/// previous stage waits for) and W (weight gradients, which nobody waits for). Its forwards and
/// Bs run in 1F1B order; the simulator places each W (sim/simulator.h): into idle time when one
/// fits, and before a forward that would otherwise hold more micro-batches than 1F1B does, so
/// memory stays at 1F1B's while the fill and drain shrink.

#include <string>
#include <string_view>
#include <vector>

#include "ir/parallel_config.h"
#include "util/expected.h"

namespace autopar::sim {

/// The one schedule enum (ir/parallel_config.h), under the name the simulator has used.
using ScheduleKind = ir::Schedule;

/// Declared in ir/parallel_config.h: stages, model chunks, micro-batches and schedule.
using ir::PipelineShape;

struct Action {
  enum Kind { kForward, kBackward };
  Kind kind = kForward;
  int microBatch = 0;
  int chunk = 0;  ///< model chunk on this stage, 0..v-1 (always 0 unless interleaved)
  bool operator==(const Action&) const = default;
};

using StageSchedule = std::vector<Action>;
using Schedule = std::vector<StageSchedule>;  ///< one ordered action list per stage

/// Checks the counts and the schedule's own needs: the interleaved schedule needs v >= 2,
/// p >= 2 and m a multiple of p (Megatron-LM's requirement); the others need v == 1.
/// Error fields are named as a config would: "micro_batches: 6 is not a multiple of ...".
Status validateShape(const PipelineShape& shape);

/// The virtual stage that chunk `chunk` of stage `stage` holds: chunk * stages + stage.
inline int virtualStageOf(const PipelineShape& shape, int stage, int chunk) {
  return chunk * shape.stages + stage;
}

/// Every stage's actions for a valid shape.
Expected<Schedule> buildSchedule(const PipelineShape& shape);

/// Checks that `schedule` has one list per stage, and that every stage runs the forward and the
/// backward of every (micro-batch, chunk) exactly once, the backward after the forward.
/// Example error: "stage 2: B3 runs before F3".
Status checkSchedule(const PipelineShape& shape, const Schedule& schedule);

/// "F3" for the forward of micro-batch 3 on chunk 0, "B3.1" for its backward on chunk 1.
std::string actionName(const Action& action);
/// The action names of one stage, separated by spaces: "F0 F1 B0 F2 B1 B2".
std::string describeStage(const StageSchedule& actions);

}  // namespace autopar::sim
