// Training-log lines of Megatron-LM and torchtitan read into the figures calibrate fits on.

#include "frontend/training_log.h"

#include <gtest/gtest.h>

namespace autopar::frontend {
namespace {

TEST(TrainingLog, MegatronIterationAndMemoryLines) {
  auto figures = readTrainingLog(
      {" [2026-01-01 10:00:00] iteration       10/     100 | consumed samples:          640 | "
       "elapsed time per iteration (ms): 1500.0 | learning rate: 1.0E-04 |",
       " [2026-01-01 10:00:20] iteration       20/     100 | consumed samples:         1280 | "
       "elapsed time per iteration (ms): 1423.5 | learning rate: 1.0E-04 |",
       "[Rank 0] (after 20 iterations) memory (MB) | allocated: 30000.1 | max allocated: "
       "60211.3 | reserved: 61000.0 | max reserved: 62464.0"});
  ASSERT_TRUE(figures) << figures.error().message;
  EXPECT_DOUBLE_EQ(figures->stepSeconds, 1.4235);  // the later line wins
  EXPECT_DOUBLE_EQ(figures->peakGib, 61.0);
  EXPECT_EQ(figures->tokensPerSecondPerDevice, 0);
}

TEST(TrainingLog, TorchtitanMetricsLineWithColours) {
  auto figures = readTrainingLog(
      {"\x1b[31mstep: 10  \x1b[32mloss:  7.1234  \x1b[33mmemory: 31.02GiB(39.23%)  \x1b[34mtps: "
       "5,762  \x1b[36mtflops: 333.60  \x1b[35mmfu: 33.73%\x1b[39m"});
  ASSERT_TRUE(figures) << figures.error().message;
  EXPECT_DOUBLE_EQ(figures->peakGib, 31.02);
  EXPECT_DOUBLE_EQ(figures->tokensPerSecondPerDevice, 5762);
  EXPECT_EQ(figures->stepSeconds, 0);
}

TEST(TrainingLog, RefusesLinesItCannotReadAndFiguresOutOfRange) {
  auto none = readTrainingLog({"loss went down"});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("expected a Megatron-LM line"), std::string::npos);
  auto zero = readTrainingLog({"iteration 1/2 | elapsed time per iteration (ms): 0.0 |"});
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().message.find("expected a number in (0,"), std::string::npos)
      << zero.error().message;
  EXPECT_FALSE(readTrainingLog({"memory: 200000.00GiB(10.00%)  tps: 10"}));
}

}  // namespace
}  // namespace autopar::frontend
