#include "planner/configuration/group_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "frontend/model_presets.h"
#include "frontend/transformer.h"

namespace autopar::planner {
namespace {

constexpr const char* kMixed = AUTOPAR_SHARED_DIR "/examples/mixed-cluster.yaml";

SearchRequest llama13b() {
  SearchRequest request;
  request.base.model = "llama2-13b";
  request.base.gbs = 256;
  return request;
}

/// The shared plan's shares cover the batch, each group fits its share, the step is the slowest
/// group's plus the synchronisation across groups, and it beats either group alone.
TEST(SearchGroups, SharingTheBatchBeatsEitherGroupAlone) {
  auto groups = cluster::loadClusterGroupsYaml(kMixed);
  ASSERT_TRUE(groups) << groups.error().message;
  auto found = searchGroups(llama13b(), *groups, {});
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_EQ(found->shared.size(), 1U);
  ASSERT_TRUE(found->chosen && found->chosen->kind == GroupSearch::Choice::kShared);
  const SharedPlan& plan = found->shared.front();
  ASSERT_EQ(plan.shares.size(), 2U);
  int64_t samples = 0;
  double slowest = 0;
  for (const GroupOutcome& share : plan.shares) {
    ASSERT_TRUE(share.found);
    EXPECT_TRUE(share.found->estimate->fits());
    EXPECT_EQ(share.found->best->gbs, share.samples);
    samples += share.samples;
    slowest = std::max(slowest, share.throughput.stepSeconds);
  }
  EXPECT_EQ(samples, 256);
  EXPECT_DOUBLE_EQ(plan.slowestGroupSeconds, slowest);
  EXPECT_GT(plan.syncSeconds, 0);
  EXPECT_DOUBLE_EQ(plan.throughput.stepSeconds, slowest + plan.syncSeconds);
  for (const GroupOutcome& alone : found->groups) {
    EXPECT_LT(plan.throughput.stepSeconds, alone.throughput.stepSeconds) << alone.group.name;
  }
}

/// Moving one quantum (8 samples of 256) either way between the groups makes the slower of the
/// two no faster: the balance is a local optimum.
TEST(SearchGroups, NoQuantumMovedImprovesTheBalance) {
  auto groups = cluster::loadClusterGroupsYaml(kMixed);
  ASSERT_TRUE(groups);
  auto found = searchGroups(llama13b(), *groups, {});
  ASSERT_TRUE(found && !found->shared.empty());
  const SharedPlan& plan = found->shared.front();
  const GroupOutcome& first = plan.shares[0];
  const GroupOutcome& second = plan.shares[1];
  for (int64_t move : {-8, 8}) {
    auto a = searchGroup(llama13b(), first.group, first.samples + move);
    auto b = searchGroup(llama13b(), second.group, second.samples - move);
    ASSERT_TRUE(a && b);
    if (!a->found || !b->found) continue;
    EXPECT_GE(std::max(a->throughput.stepSeconds, b->throughput.stepSeconds),
              plan.slowestGroupSeconds)
        << "moving " << move;
  }
}

/// Across groups the gradients cross the link the file gives: halving its bandwidth doubles the
/// synchronisation (the latency aside), and without cross-group plans the fastest group wins.
TEST(SearchGroups, TheSynchronisationFollowsTheLinkAndCanBeTurnedOff) {
  auto groups = cluster::loadClusterGroupsYaml(kMixed);
  ASSERT_TRUE(groups);
  auto found = searchGroups(llama13b(), *groups, {});
  ASSERT_TRUE(found && !found->shared.empty());
  cluster::ClusterGroups slower = *groups;
  slower.links.front().bytesPerSecond /= 2;
  auto slowed = searchGroups(llama13b(), slower, {});
  ASSERT_TRUE(slowed && !slowed->shared.empty());
  const double latency = 2 * groups->links.front().latencySeconds;
  EXPECT_NEAR(slowed->shared.front().syncSeconds - latency,
              2 * (found->shared.front().syncSeconds - latency), 1e-9);
  auto alone = searchGroups(llama13b(), *groups, {Objective::kFastest, false, std::nullopt});
  ASSERT_TRUE(alone && alone->chosen);
  EXPECT_TRUE(alone->shared.empty());
  EXPECT_EQ(alone->chosen->kind, GroupSearch::Choice::kAlone);
  EXPECT_TRUE(alone->pipelines.empty());
  EXPECT_EQ(alone->groups[alone->chosen->index].group.name, "h100");
}

/// Across groups the gradients travel in the bytes the data-parallel reduction moves: 4 an
/// element where Megatron accumulates in fp32, 2 where DeepSpeed's BF16_Optimizer reduces the bf16
/// cast of its fp32 accumulator.
TEST(SearchGroups, CrossGroupGradientsAreWhatTheReductionMoves) {
  auto groups = cluster::loadClusterGroupsYaml(kMixed);
  ASSERT_TRUE(groups);
  SearchRequest request = llama13b();
  auto outcome = searchGroup(request, groups->groups.front(), 256);
  ASSERT_TRUE(outcome && outcome->found);
  ConfigurationSearch found = *outcome->found;
  const double parameters = static_cast<double>(
      frontend::transformerParameterCount(*frontend::transformerPreset("llama2-13b")));
  found.best->precision = "bf16";
  found.best->zero = 0;
  EXPECT_DOUBLE_EQ(crossGroupGradientBytes(found), parameters * 4);
  found.best->framework = cost::Framework::kMegatronDeepSpeed;
  found.best->codePath = cost::frameworkProfile(cost::Framework::kMegatronDeepSpeed).codePath;
  ASSERT_TRUE(found.best->bf16OptimizerRuns());
  EXPECT_DOUBLE_EQ(crossGroupGradientBytes(found), parameters * 2);
}

/// Under a budget the fastest choice stays within it, and no group alone at any size the budget
/// affords is faster.
TEST(ChooseDevices, TheFastestChoiceWithinABudget) {
  auto groups = cluster::loadClusterGroupsYaml(kMixed);
  ASSERT_TRUE(groups);
  auto offered = parseAvailability("", *groups);
  ASSERT_TRUE(offered);
  EXPECT_EQ(offered->nodes, (std::vector<int>{2, 4}));
  offered->maxDollarsPerHour = 50;
  auto found = searchGroups(llama13b(), *groups, {Objective::kFastest, true, *offered});
  ASSERT_TRUE(found && found->chosen && found->devices);
  const Throughput& chosen = found->chosenThroughput();
  EXPECT_LE(chosen.dollarsPerHour, 50);
  for (size_t g = 0; g < groups->groups.size(); ++g) {
    for (int nodes = 1; nodes <= offered->nodes[g]; ++nodes) {
      cluster::DeviceGroup group = groups->groups[g];
      group.nodes = nodes;
      auto alone = searchGroup(llama13b(), group, 256);
      ASSERT_TRUE(alone);
      if (!alone->found || alone->throughput.dollarsPerHour > 50) continue;
      EXPECT_GE(chosen.tokensPerSecond, alone->throughput.tokensPerSecond)
          << group.name << " x" << nodes;
    }
  }
}

/// Under a floor the cheapest choice reaches it; a floor nothing reaches leaves no choice and
/// says which constraint failed.
TEST(ChooseDevices, TheCheapestChoiceAboveAFloor) {
  auto groups = cluster::loadClusterGroupsYaml(kMixed);
  ASSERT_TRUE(groups);
  auto offered = parseAvailability("h100=1,a100=4", *groups);
  ASSERT_TRUE(offered);
  offered->minTokensPerSecond = 120000;
  auto found = searchGroups(llama13b(), *groups, {Objective::kCost, true, *offered});
  ASSERT_TRUE(found && found->chosen);
  EXPECT_GE(found->chosenThroughput().tokensPerSecond, 120000);
  ASSERT_EQ(found->chosen->kind, GroupSearch::Choice::kShared);
  for (const GroupOutcome& share : found->shared[found->chosen->index].shares) {
    EXPECT_LE(share.group.nodes, share.group.name == "h100" ? 1 : 4);
  }
  offered->minTokensPerSecond = 1e7;
  auto none = searchGroups(llama13b(), *groups, {Objective::kCost, true, *offered});
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->chosen);
  EXPECT_NE(none->devices->unmet.find("--min-tokens-per-s 10000000"), std::string::npos)
      << none->devices->unmet;
}

TEST(ChooseDevices, BadAvailabilityNamesTheFlag) {
  auto groups = cluster::loadClusterGroupsYaml(kMixed);
  ASSERT_TRUE(groups);
  for (const char* text :
       {"h100", "h100=x", "h100=-1", "v100=1", "h100=1,h100=2", "h100=0", "h100=1000000000"}) {
    auto offered = parseAvailability(text, *groups);
    ASSERT_FALSE(offered) << text;
    EXPECT_EQ(offered.error().message.rfind("--available", 0), 0U) << offered.error().message;
  }
}

/// LLaMA2-70B on the mixed example: the A100s' first stages and the H100s' last, the layers split
/// so every stage takes about as long, each stage within its own device's memory; faster than
/// either group alone and than sharing the batch.
TEST(SplitPipeline, StagesOnBothKindsBalancedBySpeed) {
  auto groups = cluster::loadClusterGroupsYaml(kMixed);
  ASSERT_TRUE(groups);
  SearchRequest request = llama13b();
  request.base.model = "llama2-70b";
  auto found = searchGroups(request, *groups, {});
  ASSERT_TRUE(found && found->chosen) << (found ? "" : found.error().message);
  ASSERT_EQ(found->chosen->kind, GroupSearch::Choice::kPipeline);
  const SplitPipeline& pipeline = found->pipelines[found->chosen->index];
  int64_t layers = 0;
  double fastest = 1e30;
  double slowest = 0;
  for (size_t s = 0; s < pipeline.layers.size(); ++s) {
    layers += pipeline.layers[s];
    EXPECT_LE(pipeline.peakBytes[s], pipeline.deviceBytes[s]) << "stage " << s;
    const cost::StageCost& cost = pipeline.report.stages[s];
    fastest = std::min(fastest, cost.forwardSeconds + cost.backwardSeconds);
    slowest = std::max(slowest, cost.forwardSeconds + cost.backwardSeconds);
  }
  EXPECT_EQ(layers, 80);
  EXPECT_LT(slowest / fastest, 1.1);
  // The two kinds' stages differ in layers: the split follows their speeds.
  EXPECT_NE(pipeline.layers.front(), pipeline.layers.back());
  EXPECT_EQ(pipeline.config.worldSize(), 48);
  for (const GroupOutcome& alone : found->groups) {
    ASSERT_TRUE(alone.found);
    EXPECT_LT(pipeline.throughput.stepSeconds, alone.throughput.stepSeconds);
  }
  for (const SharedPlan& shared : found->shared) {
    EXPECT_LT(pipeline.throughput.stepSeconds, shared.throughput.stepSeconds);
  }
}

}  // namespace
}  // namespace autopar::planner
