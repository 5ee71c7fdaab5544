#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cluster/collective.h"
#include "cluster/mesh.h"

namespace autopar::cluster {
namespace {

Cluster dgxA100(int nodes) {
  auto cluster = clusterPreset("dgx-a100-80g", nodes);
  EXPECT_TRUE(cluster.ok());
  return *cluster;
}

std::vector<int> range(int first, int count, int stride = 1) {
  std::vector<int> ranks;
  for (int i = 0; i < count; ++i) ranks.push_back(first + i * stride);
  return ranks;
}

TEST(CollectiveCost, RingAllReduceInsideANodeMatchesTheFormula) {
  const Cluster cluster = dgxA100(1);
  const int64_t bytes = int64_t{1} << 30;
  const auto cost = collectiveCost(cluster, Collective::kAllReduce, range(0, 8), bytes);
  const LinkLevel& nvlink = cluster.levels[0];
  const double expected = 2 * 7 * nvlink.latencySeconds +
                          2.0 * 7 / 8 * static_cast<double>(bytes) / nvlink.bytesPerSecond;
  EXPECT_EQ(cost.algorithm, Algorithm::kRing);
  EXPECT_EQ(cost.outermostLevel, 0);
  EXPECT_DOUBLE_EQ(cost.seconds, expected);
}

TEST(CollectiveCost, AllGatherAndReduceScatterCostHalfAnAllReduceBandwidth) {
  const Cluster cluster = dgxA100(1);
  const int64_t bytes = int64_t{1} << 28;
  const auto ranks = range(0, 4);
  const auto gather = collectiveCost(cluster, Collective::kAllGather, ranks, bytes);
  const auto scatter = collectiveCost(cluster, Collective::kReduceScatter, ranks, bytes);
  const LinkLevel& nvlink = cluster.levels[0];
  EXPECT_DOUBLE_EQ(gather.seconds, 3 * nvlink.latencySeconds +
                                       0.75 * static_cast<double>(bytes) / nvlink.bytesPerSecond);
  EXPECT_DOUBLE_EQ(gather.seconds, scatter.seconds);
}

TEST(CollectiveCost, LargeMessagesAcrossNodesGoHierarchical) {
  const Cluster cluster = dgxA100(2);
  const auto cost = collectiveCost(cluster, Collective::kAllReduce, range(0, 16), int64_t{1} << 30);
  EXPECT_EQ(cost.algorithm, Algorithm::kHierarchical);
  EXPECT_EQ(cost.outermostLevel, 1);
  // Hierarchical beats a flat ring paced by InfiniBand.
  const LinkLevel& ib = cluster.levels[1];
  const double flatRing = 2.0 * 15 / 16 * static_cast<double>(int64_t{1} << 30) / ib.bytesPerSecond;
  EXPECT_LT(cost.seconds, flatRing);
}

TEST(CollectiveCost, AllGatherAcrossNodesIsOneRingWithPerHopLatency) {
  // NCCL runs all-gather and reduce-scatter only as rings: 1536 ranks on 192 nodes pay 1344
  // NVLink hops and 191 network hops, and the ring moves at the slower of NVLink and the 8 NICs.
  const Cluster cluster = dgxA100(192);
  const int64_t bytes = int64_t{1} << 20;
  const auto cost = collectiveCost(cluster, Collective::kAllGather, range(0, 1536), bytes);
  const LinkLevel& nvlink = cluster.levels[0];
  const LinkLevel& ib = cluster.levels[1];
  const double perByte = std::max(1 / nvlink.bytesPerSecond, 1 / (8 * ib.bytesPerSecond));
  const double expected = 1344 * nvlink.latencySeconds + 191 * ib.latencySeconds +
                          1535.0 / 1536 * static_cast<double>(bytes) * perByte;
  EXPECT_EQ(cost.algorithm, Algorithm::kRing);
  EXPECT_DOUBLE_EQ(cost.seconds, expected);
  const auto scatter = collectiveCost(cluster, Collective::kReduceScatter, range(0, 1536), bytes);
  EXPECT_DOUBLE_EQ(scatter.seconds, expected);
}

TEST(CollectiveCost, TinyMessagesOverManyNodesUseATree) {
  const Cluster cluster = dgxA100(64);
  // One rank per node: no hierarchy to exploit, latency dominates.
  const auto cost = collectiveCost(cluster, Collective::kAllReduce, range(0, 64, 8), 64);
  EXPECT_EQ(cost.algorithm, Algorithm::kTree);
  EXPECT_EQ(cost.outermostLevel, 1);
}

TEST(CollectiveCost, GrowsWithBytesAndIsFreeForOneRank) {
  const Cluster cluster = dgxA100(2);
  for (auto collective :
       {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
        Collective::kAllToAll, Collective::kBroadcast}) {
    double previous = 0;
    for (int64_t bytes = 1024; bytes <= (int64_t{1} << 32); bytes *= 16) {
      const double seconds = collectiveCost(cluster, collective, range(0, 16), bytes).seconds;
      EXPECT_GT(seconds, previous) << collectiveName(collective);
      previous = seconds;
    }
    EXPECT_EQ(collectiveCost(cluster, collective, range(3, 1), 1 << 20).seconds, 0.0);
  }
}

TEST(CollectiveCost, SendRecvUsesTheLinkItCrosses) {
  const Cluster cluster = dgxA100(2);
  const int64_t bytes = 1 << 26;
  const auto inside = collectiveCost(cluster, Collective::kSendRecv, std::vector<int>{0, 1}, bytes);
  const auto across = collectiveCost(cluster, Collective::kSendRecv, std::vector<int>{0, 8}, bytes);
  EXPECT_EQ(inside.outermostLevel, 0);
  EXPECT_EQ(across.outermostLevel, 1);
  EXPECT_DOUBLE_EQ(across.seconds,
                   cluster.levels[1].latencySeconds +
                       static_cast<double>(bytes) / cluster.levels[1].bytesPerSecond);
  EXPECT_GT(across.seconds, inside.seconds);
}

TEST(Mesh, CoordinatesAndGroupsAreRowMajor) {
  const Mesh mesh({2, 4});
  EXPECT_EQ(mesh.coordinate(5), (std::vector<int64_t>{1, 1}));
  const std::vector<int> axis1{1};
  const std::vector<int> axis0{0};
  EXPECT_EQ(mesh.group(5, axis1), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(mesh.group(5, axis0), (std::vector<int>{1, 5}));
  EXPECT_EQ(mesh.groups(axis0).size(), 4u);
  const Cluster cluster = dgxA100(2);
  const Mesh wide({2, 8});
  EXPECT_EQ(wide.levelOf(cluster, axis1), 0);  // the 8 ranks of one node
  EXPECT_EQ(wide.levelOf(cluster, axis0), 1);  // {r, r+8} crosses nodes
}

TEST(Mesh, PositionOfARankAmongItsRanks) {
  const Mesh shifted({2, 2}, {4, 5, 6, 7});
  EXPECT_EQ(shifted.positionOf(6), 2);
  EXPECT_EQ(shifted.positionOf(1), -1);
}

}  // namespace
}  // namespace autopar::cluster
