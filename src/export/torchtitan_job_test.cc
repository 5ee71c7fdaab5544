#include "export/torchtitan_job.h"

#include <gtest/gtest.h>

#include "cost/framework.h"
#include "export/torchtitan_test_util.h"

namespace autopar::exporters {
namespace {

using testing::has;
using testing::llama2;

ir::TrainingSetup fsdpConfig() { return testing::fsdpConfig(kTorchtitanTomlRelease); }

TorchtitanJob jobOf(const ir::TrainingSetup& config, const frontend::TransformerConfig& model) {
  auto job = torchtitanJob(config, model);
  EXPECT_TRUE(job.ok()) << job.error().message;
  return job.ok() ? *job : TorchtitanJob{};
}

/// The trainer derives the accumulation steps from global_batch_size / (local_batch_size x
/// replicas): 32 / (2 x 4) = 4 micro-batches of 2.
TEST(TorchtitanJob, ShardsOverDataParallelAndCountsTheBatchInSamples) {
  const std::string toml = jobOf(fsdpConfig(), llama2()).toml;
  EXPECT_TRUE(has(toml,
                  "[parallelism]\ndata_parallel_replicate_degree = 1\n"
                  "data_parallel_shard_degree = 4\ntensor_parallel_degree = 2\n"))
      << toml;
  EXPECT_TRUE(has(toml, "local_batch_size = 2\nglobal_batch_size = 32\nseq_len = 4096\n")) << toml;
  EXPECT_TRUE(has(toml, "[model]\nname = \"llama3\"\nflavor = \"autopar\"\n")) << toml;
  EXPECT_TRUE(has(toml, "[experimental]\ncustom_import = \"autopar_flavor\"\n")) << toml;
  EXPECT_TRUE(has(toml, "[activation_checkpoint]\nmode = \"none\"\n")) << toml;
  EXPECT_FALSE(has(toml, "fsdp_reshard_after_forward")) << toml;
  ir::TrainingSetup zero2 = fsdpConfig();
  zero2.zero = 2;
  EXPECT_TRUE(has(jobOf(zero2, llama2()).toml, "fsdp_reshard_after_forward = \"never\"\n"));
}

/// Under a pipeline the replica's whole batch is one step, cut in micro-batches of the plan's.
TEST(TorchtitanJob, APipelineTakesTheReplicasBatchInMicroBatches) {
  ir::TrainingSetup config = fsdpConfig();
  config.pp = 2;
  config.dp = 2;
  const std::string toml = jobOf(config, llama2()).toml;
  EXPECT_TRUE(has(toml,
                  "pipeline_parallel_schedule = \"1F1B\"\n"
                  "pipeline_parallel_microbatch_size = 2\n"))
      << toml;
  EXPECT_TRUE(has(toml, "local_batch_size = 16\nglobal_batch_size = 32\n")) << toml;
  // 3 chunks on 2 stages of Llama 2's 32 layers, the embedding and the output counted as one
  // each: ceil(34 / 6) = 6 virtual stages. No value makes 8 (ceil(34 / 4) = 9, ceil(34 / 5) = 7):
  // the job says so.
  config.schedule = ir::Schedule::kInterleaved;
  config.vpp = 3;
  const std::string interleaved = jobOf(config, llama2()).toml;
  EXPECT_TRUE(has(interleaved, "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"))
      << interleaved;
  EXPECT_TRUE(has(interleaved, "pipeline_parallel_layers_per_stage = 6\n")) << interleaved;
  config.vpp = 4;
  const std::string unmatched = jobOf(config, llama2()).toml;
  EXPECT_FALSE(has(unmatched, "pipeline_parallel_layers_per_stage =")) << unmatched;
  EXPECT_TRUE(has(unmatched,
                  "# Note: no pipeline_parallel_layers_per_stage makes 8 virtual "
                  "stages of 32 layers"))
      << unmatched;
}

/// v0.2.2 rounds int(8 dim / 3) up to multiple_of: 10922 becomes Llama 2's 11008. A narrower MLP
/// is scaled below its width first.
TEST(TorchtitanJob, TheFlavorIsTheModelsOwnShape) {
  frontend::TransformerConfig model = llama2();
  std::string flavor = jobOf(fsdpConfig(), model).flavor;
  EXPECT_TRUE(has(flavor, "llama3_args[\"autopar\"] = TransformerModelArgs(\n")) << flavor;
  EXPECT_TRUE(has(flavor,
                  "dim=4096,\n    n_layers=32,\n    n_heads=32,\n    n_kv_heads=32,\n"
                  "    vocab_size=32000,\n    multiple_of=11008,\n"
                  "    ffn_dim_multiplier=None,\n"))
      << flavor;
  EXPECT_TRUE(has(flavor, "rope_theta=10000,\n")) << flavor;
  // Without scaling, a factor of 1 leaves the frequencies as they are.
  EXPECT_TRUE(has(flavor, "rope_scaling_args=RoPEScalingArgs(scaling_factor=1.0),\n")) << flavor;
  model.ffn = 8192;  // below 10922: 10922 x 0.750045779 = 8192.0, rounded up to itself
  flavor = jobOf(fsdpConfig(), model).flavor;
  EXPECT_TRUE(has(flavor, "multiple_of=8192,\n    ffn_dim_multiplier=0.750045779,\n")) << flavor;
  model.ropeScaling = {.type = "llama3", .factor = 8};
  flavor = jobOf(fsdpConfig(), model).flavor;
  EXPECT_TRUE(has(flavor, "scaling_factor=8, low_freq_factor=1, high_freq_factor=4")) << flavor;
}

TEST(TorchtitanJob, Float8LinearsGatherInFloat8UnderFsdp) {
  ir::TrainingSetup config = fsdpConfig();
  config.precision = "fp8";
  config.fp8ParamGather = true;
  const std::string toml = jobOf(config, llama2()).toml;
  EXPECT_TRUE(has(toml, "converters = [\"quantize.linear.float8\"]\n")) << toml;
  EXPECT_TRUE(has(toml,
                  "[quantize.linear.float8]\nenable_fsdp_float8_all_gather = true\n"
                  "precompute_float8_dynamic_scale_for_fsdp = true\n"
                  "filter_fqns = [\"output\"]\n"))
      << toml;
}

/// What v0.2.2 cannot run the plan's way is said, or refused in one line.
TEST(TorchtitanJob, SaysWhatItCannotExpress) {
  ir::TrainingSetup config = fsdpConfig();
  config.codePath.loss = ir::LossKernel::kChunked;
  EXPECT_TRUE(has(jobOf(config, llama2()).toml,
                  "# Note: torchtitan v0.2.2's loss is cross entropy over the whole logits"));
  ir::TrainingSetup older = fsdpConfig();
  older.frameworkRelease = "2024-12";
  older.codePath = cost::releaseCodePath(older.framework, older.frameworkRelease);
  const std::string olderToml = jobOf(older, llama2()).toml;
  EXPECT_TRUE(has(olderToml, "# Note: priced as torchtitan@2024-12; written as torchtitan v0.2.2"))
      << olderToml;
  EXPECT_TRUE(has(olderToml, "# Note: the plan priced RMSNorm as eager ops")) << olderToml;
  EXPECT_TRUE(readsTorchtitanJob("2024-12"));
  EXPECT_FALSE(readsTorchtitanJob("2026-05"));
  EXPECT_FALSE(readsTorchtitanJob(""));
  frontend::TransformerConfig tied = llama2();
  tied.tiedEmbeddings = true;
  auto refused = torchtitanJob(fsdpConfig(), tied);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(has(refused.error().message, "tied embeddings")) << refused.error().message;
  EXPECT_EQ(refused.error().message.find('\n'), std::string::npos);
}

/// Its DDP runs alone: ZeRO 0 with tensor parallelism is refused at this release only.
TEST(TorchtitanJob, ReplicasBesideModelParallelismAreRefusedAtThisRelease) {
  ir::ParallelConfig config;
  config.tp = 2;
  config.dp = 4;
  config.zero = 0;
  const cost::FrameworkProfile& profile = cost::frameworkProfile(ir::Framework::kTorchtitan);
  EXPECT_TRUE(cost::checkRunnable(profile, config, "bf16").ok());
  auto refused = cost::checkRunnable(profile, config, "bf16", kTorchtitanTomlRelease);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(has(refused.error().message, "its DDP runs alone")) << refused.error().message;
  config.tp = 1;
  EXPECT_TRUE(cost::checkRunnable(profile, config, "bf16", kTorchtitanTomlRelease).ok());
}

}  // namespace
}  // namespace autopar::exporters
