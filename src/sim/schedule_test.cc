#include "sim/schedule.h"

#include <gtest/gtest.h>

namespace autopar::sim {
namespace {

std::vector<std::string> describeAll(const PipelineShape& shape) {
  Expected<Schedule> schedule = buildSchedule(shape);
  EXPECT_TRUE(schedule.ok()) << schedule.error().message;
  std::vector<std::string> stages;
  for (const StageSchedule& actions : *schedule) stages.push_back(describeStage(actions));
  return stages;
}

std::string errorOf(const PipelineShape& shape) {
  Status valid = validateShape(shape);
  return valid.ok() ? "ok" : valid.error().message;
}

TEST(Schedule, GPipeRunsAllForwardsThenAllBackwards) {
  const auto stages =
      describeAll({.stages = 2, .microBatches = 3, .schedule = ScheduleKind::kGPipe});
  EXPECT_EQ(stages, (std::vector<std::string>{"F0 F1 F2 B0 B1 B2", "F0 F1 F2 B0 B1 B2"}));
}

TEST(Schedule, OneForwardOneBackwardWarmsUpByTheStagesBelow) {
  const auto stages =
      describeAll({.stages = 4, .microBatches = 6, .schedule = ScheduleKind::k1F1B});
  EXPECT_EQ(stages, (std::vector<std::string>{
                        "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5",
                        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5",
                        "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5",
                        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5",
                    }));
}

TEST(Schedule, OneForwardOneBackwardWithFewerMicroBatchesThanStages) {
  // Stage 0 would warm up with 3 forwards but only 2 micro-batches exist.
  const auto stages =
      describeAll({.stages = 4, .microBatches = 2, .schedule = ScheduleKind::k1F1B});
  EXPECT_EQ(stages[0], "F0 F1 B0 B1");
  EXPECT_EQ(stages[2], "F0 F1 B0 B1");
  EXPECT_EQ(stages[3], "F0 B0 F1 B1");
}

TEST(Schedule, InterleavedFollowsMegatronOrder) {
  // p = 2, v = 2: forwards go in groups of p micro-batches through chunk 0 then chunk 1;
  // backwards through chunk 1 then chunk 0. Stage 0 warms up with (p-1)*2 + (v-1)*p = 4 steps.
  const auto stages = describeAll(
      {.stages = 2, .virtualStages = 2, .microBatches = 4, .schedule = ScheduleKind::kInterleaved});
  EXPECT_EQ(stages, (std::vector<std::string>{
                        "F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3",
                        "F0 F1 F0.1 B0.1 F1.1 B1.1 F2 B0 F3 B1 F2.1 B2.1 F3.1 B3.1 B2 B3",
                    }));
}

TEST(Schedule, EveryStageRunsEachForwardAndBackwardOnceInOrder) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::k1F1B}) {
    for (int stages = 1; stages <= 6; ++stages) {
      for (int microBatches = 1; microBatches <= 9; ++microBatches) {
        const PipelineShape shape{.stages = stages, .microBatches = microBatches, .schedule = kind};
        Expected<Schedule> schedule = buildSchedule(shape);
        ASSERT_TRUE(schedule.ok()) << schedule.error().message;
        Status valid = checkSchedule(shape, *schedule);
        EXPECT_TRUE(valid.ok()) << valid.error().message;
      }
    }
  }
  for (int stages = 2; stages <= 5; ++stages) {
    for (int virtualStages = 2; virtualStages <= 4; ++virtualStages) {
      for (int groups = 1; groups <= 3; ++groups) {
        const PipelineShape shape{stages, virtualStages, groups * stages,
                                  ScheduleKind::kInterleaved};
        Expected<Schedule> schedule = buildSchedule(shape);
        ASSERT_TRUE(schedule.ok()) << schedule.error().message;
        Status valid = checkSchedule(shape, *schedule);
        EXPECT_TRUE(valid.ok()) << valid.error().message;
      }
    }
  }
}

TEST(Schedule, CheckRejectsMissingRepeatedAndEarlyBackwards) {
  const PipelineShape shape{.stages = 1, .microBatches = 2, .schedule = ScheduleKind::kGPipe};
  const Action f0{Action::kForward, 0, 0};
  const Action f1{Action::kForward, 1, 0};
  const Action b0{Action::kBackward, 0, 0};
  const Action b1{Action::kBackward, 1, 0};
  const auto errorFor = [&](const Schedule& schedule) {
    Status valid = checkSchedule(shape, schedule);
    return valid.ok() ? "ok" : valid.error().message;
  };
  EXPECT_EQ(errorFor({{f0, f1, b0, b1}}), "ok");
  EXPECT_EQ(errorFor({{f0, f1, b0}}), "stage 0: B1 never runs");
  EXPECT_EQ(errorFor({{f0, f0, b0, b1}}), "stage 0: F0 runs twice");
  EXPECT_EQ(errorFor({{f0, b1, f1, b0}}), "stage 0: B1 runs before F1");
  EXPECT_EQ(errorFor({{f0, f1, b0, b1, {Action::kForward, 2, 0}}}),
            "stage 0: F2 is out of range (2 micro-batches, 1 chunks)");
  EXPECT_EQ(errorFor({}), "schedule: expected 1 stages, got 0");
}

TEST(Schedule, ShapeErrorsNameTheField) {
  EXPECT_EQ(errorOf({.stages = 0, .microBatches = 4}), "stages: expected at least 1, got 0");
  EXPECT_EQ(errorOf({.stages = 2, .microBatches = 0}), "micro_batches: expected at least 1, got 0");
  EXPECT_EQ(errorOf({.stages = 2, .virtualStages = 2, .microBatches = 4}),
            "virtual_stages: 2 model chunks per stage need the interleaved schedule, not 1f1b");
  EXPECT_EQ(errorOf({4, 2, 6, ScheduleKind::kInterleaved}),
            "micro_batches: 6 is not a multiple of the 4 pipeline stages, which the interleaved "
            "schedule needs");
  EXPECT_EQ(errorOf({4, 1, 8, ScheduleKind::kInterleaved}),
            "virtual_stages: the interleaved schedule needs at least 2 model chunks per stage, "
            "got 1");
  EXPECT_EQ(errorOf({1, 2, 4, ScheduleKind::kInterleaved}),
            "stages: the interleaved schedule needs at least 2 pipeline stages, got 1");
  EXPECT_EQ(errorOf({.stages = 4, .microBatches = 2}), "ok");  // 1F1B allows m < p
  EXPECT_FALSE(buildSchedule({.stages = 0}).ok());
}

}  // namespace
}  // namespace autopar::sim
