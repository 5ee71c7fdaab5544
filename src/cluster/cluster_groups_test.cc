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
            "A100-SXM4-40GB, A100-SXM4-80GB, Ascend-910B, CPU-rank, H100-SXM5-80GB, or a device "
            "spec (docs/cluster-format.md)");
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

/// A device given by its spec: the group is that device over its nodes, its levels inside a node
/// kept and the last spanning the group; a reference FILE#GROUP loads it at another size.
TEST(ClusterGroups, ASpecGroupIsItsDeviceAndLevelsOverItsNodes) {
  const std::string path = AUTOPAR_SOURCE_DIR "/examples/clusters/h100-v100-spec.yaml";
  auto groups = loadClusterGroupsYaml(path);
  ASSERT_TRUE(groups.ok()) << groups.error().message;
  const DeviceGroup& v100 = groups->groups[1];
  ASSERT_TRUE(v100.spec);
  EXPECT_TRUE(v100.preset.empty());
  EXPECT_EQ(v100.device, "V100-SXM2-32GB");
  EXPECT_EQ(v100.zone, "b");
  EXPECT_EQ(v100.reference, path + "#v100");
  auto cluster = groups->clusterOf(v100);
  ASSERT_TRUE(cluster.ok());
  EXPECT_EQ(cluster->numDevices, 32);
  EXPECT_EQ(cluster->device.memoryBytes, int64_t{32} << 30);
  ASSERT_EQ(cluster->levels.size(), 2u);
  EXPECT_EQ(cluster->levels[0].domainSize, 8);
  EXPECT_EQ(cluster->levels[1].domainSize, 32);
  EXPECT_TRUE(isGroupReference(v100.reference));
  EXPECT_FALSE(isGroupReference(path));
  auto two = loadGroupReference(v100.reference, 2);
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->numDevices, 16);
  EXPECT_EQ(two->levels[1].domainSize, 16);
}

TEST(ClusterGroups, GroupsInDifferentZonesNeedALink) {
  // With the link, different zones are fine.
  EXPECT_EQ(errorOf("nodes: 4, price", "nodes: 4, zone: eu, price"), "parsed");
  std::string text = kMixed;
  text.replace(text.find("nodes: 4, price"), 15, "nodes: 4, zone: eu, price");
  text = text.substr(0, text.find("links:"));
  auto parsed = parseClusterGroupsYaml(text, "m.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message,
            "m.yaml: groups[1].zone: h100 (no zone) and a100 (zone eu) are in different zones; "
            "links must give the link between them");
  EXPECT_EQ(errorOf("device: A100-SXM4-40GB,", "device: A100-SXM4-40GB, levels: [],"),
            "m.yaml: groups[1].levels: a preset's device brings its own links; give levels with "
            "a device spec (docs/cluster-format.md)");
}

}  // namespace
}  // namespace autopar::cluster
