#include <gtest/gtest.h>

#include <fstream>

#include "cluster/cluster.h"

namespace autopar::cluster {
namespace {

TEST(ClusterPresets, EveryNamedPresetLoadsWithEightDevicesPerNode) {
  for (const auto& name : clusterPresetNames()) {
    auto cluster = clusterPreset(name);
    ASSERT_TRUE(cluster.ok()) << name;
    EXPECT_EQ(cluster->numDevices, 8) << name;
    EXPECT_EQ(cluster->devicesPerNode, 8) << name;
    EXPECT_EQ(cluster->levels.front().domainSize, 8) << name;
    EXPECT_EQ(cluster->levels.back().domainSize, cluster->numDevices) << name;
    EXPECT_GT(cluster->device.memoryBytes, 0) << name;
  }
}

TEST(ClusterPresets, A100FiguresComeFromHardwareJson) {
  auto cluster = clusterPreset("dgx-a100-80g");
  ASSERT_TRUE(cluster.ok());
  EXPECT_EQ(cluster->device.peakFlopsPerSecond.at(Precision::kBF16), 312e12);
  EXPECT_EQ(cluster->device.memoryBytes, int64_t{80} << 30);
  EXPECT_DOUBLE_EQ(cluster->device.memoryBytesPerSecond, 2.039e12);
  EXPECT_EQ(cluster->levels[0].name, "nvlink");
  EXPECT_DOUBLE_EQ(cluster->levels[0].bytesPerSecond, 300e9);
  EXPECT_DOUBLE_EQ(cluster->levels[1].bytesPerSecond, 25e9);  // 200 Gb/s HDR per GPU
}

TEST(ClusterPresets, NodesMultiplyAndDevicesTakeAPrefix) {
  auto cluster = clusterPreset("dgx-h100", 4);
  ASSERT_TRUE(cluster.ok());
  EXPECT_EQ(cluster->numDevices, 32);
  EXPECT_EQ(cluster->levels.back().domainSize, 32);
  EXPECT_EQ(cluster->levelJoining(3, 5), 0);
  EXPECT_EQ(cluster->levelJoining(7, 8), 1);
  auto twelve = takeDevices(*cluster, 12);
  ASSERT_TRUE(twelve.ok());
  EXPECT_EQ(twelve->numDevices, 12);
  EXPECT_EQ(twelve->levelJoining(7, 8), 1);
  EXPECT_EQ(twelve->levelJoining(8, 11), 0);
}

TEST(ClusterPresets, ErrorsNameThePresetAndTheChoices) {
  auto unknown = clusterPreset("dgx-b200");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message,
            "unknown cluster preset 'dgx-b200'; expected one of: dgx-a100-80g, dgx-a100-40g, "
            "dgx-h100, ascend-910b-node, cpu-host");
  EXPECT_FALSE(clusterPreset("dgx-h100", 0).ok());
  auto cluster = clusterPreset("dgx-h100");
  ASSERT_TRUE(cluster.ok());
  auto tooMany = takeDevices(*cluster, 9);
  ASSERT_FALSE(tooMany.ok());
  EXPECT_EQ(tooMany.error().message, "--devices 9: expected 1..8 (the devices of dgx-h100)");
}

TEST(ClusterYaml, ExampleFileEqualsTwoDgxA100Nodes) {
  auto fromFile = loadClusterYaml(AUTOPAR_SOURCE_DIR "/examples/clusters/two-dgx-a100.yaml");
  ASSERT_TRUE(fromFile.ok()) << fromFile.error().message;
  auto preset = clusterPreset("dgx-a100-80g", 2);
  ASSERT_TRUE(preset.ok());
  EXPECT_EQ(fromFile->numDevices, 16);
  EXPECT_EQ(fromFile->device.memoryBytes, preset->device.memoryBytes);
  EXPECT_EQ(fromFile->device.peakFlopsPerSecond, preset->device.peakFlopsPerSecond);
  ASSERT_EQ(fromFile->levels.size(), preset->levels.size());
  for (size_t i = 0; i < preset->levels.size(); ++i) {
    EXPECT_EQ(fromFile->levels[i].domainSize, preset->levels[i].domainSize);
    EXPECT_DOUBLE_EQ(fromFile->levels[i].bytesPerSecond, preset->levels[i].bytesPerSecond);
    EXPECT_DOUBLE_EQ(fromFile->levels[i].latencySeconds, preset->levels[i].latencySeconds);
  }
}

struct YamlCase {
  std::string text;
  std::string expected;
};

TEST(ClusterYaml, ErrorsNameTheFileTheKeyAndTheExpectation) {
  const std::string device =
      "device: {name: X, memory_gib: 80, memory_gbytes_per_s: 2000, peak_tflops: {bf16: 312}}\n";
  const std::vector<YamlCase> cases{
      {"name: [a\n", "c.yaml: line 2: end of sequence flow not found"},
      {"name: x\ndevices_per_node: 8\n" + device +
           "levels:\n  - {name: nv, domain_size: 8, gbytes_per_s: -5, latency_us: 2}\n",
       "c.yaml: levels[0].gbytes_per_s: expected a number from 0.001 to 2^40, got '-5'"},
      {"name: x\ndevices_per_node: 8\n" + device +
           "levels:\n  - {name: nv, gbytes_per_s: 1e-300, latency_us: 2}\n",
       "c.yaml: levels[0].gbytes_per_s: expected a number from 0.001 to 2^40, got '1e-300'"},
      {"name: x\ndevices_per_node: 8\n" + device +
           "levels: [{name: a, gbytes_per_s: 1, latency_us: 1, latency_ms: 2}]\n",
       "c.yaml: levels[0].latency_ms: unknown key; did you mean latency_us?"},
      {"name: x\ndevices_per_node: 8\n"
       "device: {name: X, memory_gib: 80, memory_gbytes_per_s: 2000, peak_tflops: {bf16: 1, "
       "bf16: 2}}\nlevels: [{name: a, gbytes_per_s: 1, latency_us: 1}]\n",
       "c.yaml: device.peak_tflops.bf16: given twice; give it once"},
      {"name: x\ndevices_per_node: 8\n" + device +
           "levels: [{name: a, gbytes_per_s: 1, latency_us: 1}]\n---\nname: y\n",
       "c.yaml: holds 2 documents (---); expected one cluster"},
      {"name: x\ndevices_per_node: 8\n" + device, "c.yaml: levels: expected a non-empty list"},
      {"name: x\n" + device + "levels: [{name: a, gbytes_per_s: 1, latency_us: 1}]\n",
       "c.yaml: devices_per_node: missing; expected a positive number"},
      {"name: x\ndevices_per_node: 8\n"
       "device: {name: X, memory_gib: 80, memory_gbytes_per_s: 2000, peak_tflops: {int4: 1}}\n"
       "levels: [{name: a, gbytes_per_s: 1, latency_us: 1}]\n",
       "c.yaml: device.peak_tflops.int4: unknown precision"},
      {"name: x\ndevices_per_node: 8\n" + device +
           "levels:\n  - {name: a, domain_size: 3, gbytes_per_s: 1, latency_us: 1}\n"
           "  - {name: b, gbytes_per_s: 1, latency_us: 1}\n",
       "c.yaml: levels[0].domain_size: 3 must be a multiple of the previous level's (1) and "
       "divide the 8 devices"},
  };
  for (const auto& testCase : cases) {
    auto cluster = parseClusterYaml(testCase.text, "c.yaml");
    ASSERT_FALSE(cluster.ok()) << testCase.text;
    EXPECT_EQ(cluster.error().message.substr(0, testCase.expected.size()), testCase.expected)
        << cluster.error().message;
    EXPECT_EQ(cluster.error().message.find('\n'), std::string::npos);
  }
  auto missing = loadClusterYaml("/nonexistent/c.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "/nonexistent/c.yaml: cannot open file for reading");
}

}  // namespace
}  // namespace autopar::cluster
