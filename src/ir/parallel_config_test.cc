#include "ir/parallel_config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace autopar::ir {
namespace {

TEST(ParallelConfig, ScheduleNamesRoundTripAndUnknownNamesListTheChoices) {
  for (Schedule schedule :
       {Schedule::kGPipe, Schedule::k1F1B, Schedule::kInterleaved, Schedule::kZeroBubbleH1}) {
    Expected<Schedule> parsed = parseSchedule(scheduleName(schedule));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, schedule);
    EXPECT_EQ(fmt::format("{}", schedule), scheduleName(schedule));
  }
  Expected<Schedule> unknown = parseSchedule("zero-bubble");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message,
            "unknown pipeline schedule 'zero-bubble'; expected one of: gpipe, 1f1b, interleaved, "
            "zb-h1");
}

TEST(ParallelConfig, RecomputeNamesRoundTripAndUnknownNamesListTheChoices) {
  for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    Expected<Recompute> parsed = parseRecompute(recomputeName(recompute));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, recompute);
    EXPECT_EQ(fmt::format("{}", recompute), recomputeName(recompute));
  }
  Expected<Recompute> unknown = parseRecompute("most");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "unknown recompute 'most'; expected none, selective or full");
}

TEST(ParallelConfig, WorldSizeIsTheProductOfTheDegreesThatSplitDevices) {
  ParallelConfig config;
  config.tp = 8;
  config.pp = 4;
  config.dp = 2;
  config.cp = 2;
  config.ep = 2;  // carved out of dp: no devices of its own
  EXPECT_EQ(config.worldSize(), 128);
}

}  // namespace
}  // namespace autopar::ir
