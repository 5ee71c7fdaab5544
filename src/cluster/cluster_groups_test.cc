#include "cluster/cluster_groups.h"

#include <gtest/gtest.h>

#include <string>

namespace autopar::cluster {
namespace {

constexpr const char* kMixed = R"(name: mixed
groups:
  - {name: h100, device: H100-SXM5-80GB, nodes: 2, devices_per_node: 8, price_per_device_hour: 4}
  - {name: a100, device: A100-SXM4-40GB, nodes: 4, price_per_device_hour: 1.2}
links:
  - {between: [h100, a100], gbps_per_device: 100, latency_us: 10}
)";

/// The file with `from` replaced by `to`, parsed; its error message.
std::string errorOf(const std::string& from, const std::string& to) {
  std::string text = kMixed;
  text.replace(text.find(from), from.size(), to);
  auto parsed = parseClusterGroupsYaml(text, "m.yaml");
  return parsed ? "parsed" : parsed.error().message;
}

TEST(ClusterGroups, TheSharedExampleIsAcceptedAsItStands) {
  auto groups = loadClusterGroupsYaml(AUTOPAR_SHARED_DIR "/examples/mixed-cluster.yaml");
  ASSERT_TRUE(groups.ok()) << groups.error().message;
  ASSERT_EQ(groups->groups.size(), 2u);
  EXPECT_EQ(groups->groups[0].preset, "dgx-h100");
  EXPECT_EQ(groups->groups[1].preset, "dgx-a100-40g");
  EXPECT_EQ(groups->groups[1].devices(), 32);
  EXPECT_DOUBLE_EQ(groups->groups[1].pricePerDeviceHour, 1.20);
  ASSERT_EQ(groups->links.size(), 1u);
  EXPECT_DOUBLE_EQ(groups->links[0].bytesPerSecond, 100e9 / 8);
  EXPECT_DOUBLE_EQ(groups->links[0].latencySeconds, 10e-6);
}

TEST(ClusterGroups, AGroupIsItsPresetOverItsNodes) {
  auto groups = parseClusterGroupsYaml(kMixed, "m.yaml");
  ASSERT_TRUE(groups.ok()) << groups.error().message;
  auto a100 = groups->clusterOf(groups->groups[1]);
  ASSERT_TRUE(a100.ok());
  EXPECT_EQ(a100->numDevices, 32);
  EXPECT_EQ(a100->device.name, "A100-SXM4-40GB");
  EXPECT_EQ(a100->name, "mixed/a100");
}

TEST(ClusterGroups, BadSpecsAreOneLineNamingTheField) {
  EXPECT_EQ(errorOf("nodes: 2,", "nodes: 0,"),
            "m.yaml: groups[0].nodes: expected a number from 0.001 to 2^40, got '0'");
  EXPECT_EQ(errorOf("[h100, a100]", "[h100, v100]"),
            "m.yaml: links[0].between: no group named 'v100'; the groups are a100, h100");
  EXPECT_EQ(errorOf("price_per_device_hour: 4}", "price_per_device_hour: -4}"),
            "m.yaml: groups[0].price_per_device_hour: expected US dollars from 0 to 1e6, got "
            "'-4'");
  EXPECT_EQ(errorOf("device: H100-SXM5-80GB", "device: H200"),
            "m.yaml: groups[0].device: 'H200' is no preset's device; expected one of "
            "A100-SXM4-40GB, A100-SXM4-80GB, Ascend-910B, CPU-rank, H100-SXM5-80GB");
  EXPECT_EQ(errorOf("name: a100", "name: h100"),
            "m.yaml: groups[1].name: 'h100' names another group too");
  EXPECT_EQ(errorOf("[h100, a100]", "[h100, h100]"),
            "m.yaml: links[0].between: joins 'h100' to itself; a group's own links are its "
            "preset's");
  EXPECT_EQ(errorOf("latency_us: 10", "latency_ms: 10"),
            "m.yaml: links[0].latency_ms: unknown key; did you mean latency_us? "
            "(docs/cluster-format.md)");
  EXPECT_EQ(errorOf("groups:", "groups: []\nx:"),
            "m.yaml: x: unknown key; did you mean name? "
            "(docs/cluster-format.md)");
}

TEST(ClusterGroups, OnlyAFileWithGroupsDescribesThem) {
  EXPECT_TRUE(describesGroups(kMixed));
  EXPECT_FALSE(describesGroups("name: one\ndevices_per_node: 8\n# groups: not a key\n"));
}

}  // namespace
}  // namespace autopar::cluster
