#include "export/torchtitan_toml.h"

#include <gtest/gtest.h>

#include "cost/framework.h"

namespace autopar::exporters {
namespace {

ir::TrainingSetup fsdpConfig() {
  ir::TrainingSetup config;
  config.tp = 2;
  config.dp = 4;
  config.gbs = 32;
  config.zero = 3;
  config.framework = ir::Framework::kTorchtitan;
  config.codePath = cost::frameworkProfile(config.framework).codePath;
  return config;
}

TEST(TorchtitanToml, ShardsOverDataParallelUnderZeroThreeAndNamesTheDegrees) {
  const std::string text = torchtitanConfig(fsdpConfig());
  EXPECT_NE(text.find("data_parallel_replicate_degree = 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("data_parallel_shard_degree = 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tensor_parallel_degree = 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("context_parallel_degree = 1\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("context_parallel_rotate_method"), std::string::npos) << text;
}

// The cost model prices PyTorch's all-gather ring attention; the job config asks for it.
TEST(TorchtitanToml, ContextParallelNamesTheRotateMethodTheCostModelPrices) {
  ir::TrainingSetup config = fsdpConfig();
  config.dp = 2;
  config.cp = 2;
  const std::string text = torchtitanConfig(config);
  EXPECT_NE(text.find("context_parallel_degree = 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("context_parallel_rotate_method = \"allgather\"\n"), std::string::npos)
      << text;
}

// fp8 GEMMs convert the linears to float8; fp8 parameters gather them in float8 under FSDP2.
TEST(TorchtitanToml, Fp8ParametersAreTheFloat8AllGather) {
  ir::TrainingSetup config = fsdpConfig();
  config.precision = "fp8";
  std::string text = torchtitanConfig(config);
  EXPECT_NE(text.find("converters = [\"float8\"]\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("enable_fsdp_float8_all_gather"), std::string::npos) << text;
  config.fp8ParamGather = true;
  text = torchtitanConfig(config);
  EXPECT_NE(text.find("[float8]\nenable_fsdp_float8_all_gather = true\n"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace autopar::exporters
