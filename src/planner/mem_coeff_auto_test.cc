#include "planner/mem_coeff_auto.h"

#include <gtest/gtest.h>

#include "planner/inputs.h"

namespace autopar::planner {
namespace {

TEST(MemCoeffAuto, LadderIsSeedZerosFactorsOfFour) {
  const std::vector<double> ladder = memCoeffLadder();
  ASSERT_EQ(ladder.size(), 9U);
  EXPECT_DOUBLE_EQ(ladder.front(), 0.1);
  for (size_t i = 1; i < ladder.size(); ++i) EXPECT_DOUBLE_EQ(ladder[i], 4 * ladder[i - 1]);
}

/// LLaMA2-7B's double-recursive plan on one DGX-A100, its mem_coeff chosen by `rule`.
PlanOptions llama7bRecursive(frontend::MemCoeffRule rule) {
  PlanOptions options;
  options.model = "llama2-7b";
  options.search = search::SearchMode::kRecursiveProgramming;
  options.memCoeffRule = rule;
  return options;
}

TEST(MemCoeffAuto, ChoosesTheSmallestRungThatFits) {
  auto cluster = loadCluster("dgx-a100-80g", 1, 0);
  ASSERT_TRUE(cluster.ok());
  const PlanOptions options = llama7bRecursive(frontend::MemCoeffRule::kAuto);
  int planned = 0;
  auto choice = chooseMemCoeff(options, *cluster, [&](int count) { planned = count; });
  ASSERT_TRUE(choice.ok()) << choice.error().message;
  EXPECT_TRUE(choice->fits);
  EXPECT_LE(choice->evaluated.peakBytes(), cluster->device.memoryBytes);
  EXPECT_EQ(choice->flags.at(0), "--mem-coeff");
  EXPECT_EQ(choice->flags.size(), 2U) << "LLaMA2-7B on 8 A100s fits without a lever";
  // Every rung below the chosen one was planned and did not fit.
  const std::vector<double> ladder = memCoeffLadder();
  int below = 0;
  for (double rung : ladder) {
    if (rung >= choice->options.memCoeff) break;
    ++below;
    PlanOptions smaller = options;
    smaller.memCoeff = rung;
    auto evaluated = evaluate(smaller, *cluster, smaller.modelOptions);
    ASSERT_TRUE(evaluated.ok());
    EXPECT_GT(evaluated->peakBytes(), cluster->device.memoryBytes) << "mem_coeff " << rung;
  }
  EXPECT_GT(below, 0) << "the default 0.1 does not fit";
  EXPECT_EQ(planned, below + 1);
}

TEST(MemCoeffAuto, FastestTakesTheFastestRungThatFits) {
  auto cluster = loadCluster("dgx-a100-80g", 1, 0);
  ASSERT_TRUE(cluster.ok());
  const PlanOptions options = llama7bRecursive(frontend::MemCoeffRule::kFastest);
  auto choice = chooseMemCoeff(options, *cluster);
  ASSERT_TRUE(choice.ok()) << choice.error().message;
  ASSERT_TRUE(choice->fits);
  EXPECT_EQ(choice->summary.rfind("mem_coeff fastest: ", 0), 0U) << choice->summary;
  // Every rung is planned, then the plans between the search's change points.
  const size_t plans = choice->summary.find(" plans)");
  ASSERT_NE(plans, std::string::npos) << choice->summary;
  const size_t open = choice->summary.rfind('(', plans);
  EXPECT_GT(std::stoi(choice->summary.substr(open + 1, plans - open - 1)), 9) << choice->summary;
  // The mem_coeff the flags name makes the chosen plan.
  PlanOptions named = options;
  named.memCoeff = std::stod(choice->flags.at(1));
  auto replanned = evaluate(named, *cluster, named.modelOptions);
  ASSERT_TRUE(replanned.ok());
  EXPECT_EQ(replanned->estimate.stepSeconds, choice->evaluated.estimate.stepSeconds);
  // No rung that fits is faster; the smaller of two equally fast ones would have been kept.
  int fitting = 0;
  for (double rung : memCoeffLadder()) {
    PlanOptions other = options;
    other.memCoeff = rung;
    auto evaluated = evaluate(other, *cluster, other.modelOptions);
    ASSERT_TRUE(evaluated.ok());
    if (evaluated->peakBytes() > cluster->device.memoryBytes) continue;
    ++fitting;
    const double step = evaluated->estimate.stepSeconds;
    const double chosen = choice->evaluated.estimate.stepSeconds;
    EXPECT_TRUE(step > chosen || (step == chosen && rung >= choice->options.memCoeff))
        << "mem_coeff " << rung << ": " << step << " s against " << chosen << " s";
  }
  EXPECT_GT(fitting, 1) << "a choice among several";
}

}  // namespace
}  // namespace autopar::planner
