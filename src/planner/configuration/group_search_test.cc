#include "planner/configuration/group_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

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
  ASSERT_TRUE(found->chosen && found->chosen->shared);
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
  auto alone = searchGroups(llama13b(), *groups, {Objective::kFastest, false});
  ASSERT_TRUE(alone && alone->chosen);
  EXPECT_TRUE(alone->shared.empty());
  EXPECT_FALSE(alone->chosen->shared);
  EXPECT_EQ(alone->groups[alone->chosen->index].group.name, "h100");
}

}  // namespace
}  // namespace autopar::planner
