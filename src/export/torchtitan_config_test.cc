#include "export/torchtitan_config.h"

#include <gtest/gtest.h>

#include "cost/framework.h"
#include "export/torchtitan_test_util.h"

namespace autopar::exporters {
namespace {

using testing::fsdpConfig;
using testing::has;
using testing::llama2;

std::string moduleOf(const ir::TrainingSetup& config, const frontend::TransformerConfig& model) {
  auto text = torchtitanConfig(config, model);
  EXPECT_TRUE(text.ok()) << text.error().message;
  return text.ok() ? *text : "";
}

TEST(TorchtitanConfig, ShardsOverDataParallelUnderZeroThreeAndCountsTheBatchInTokens) {
  const std::string text = moduleOf(fsdpConfig(), llama2());
  EXPECT_TRUE(has(text, "data_parallel_replicate_degree=1,\n")) << text;
  EXPECT_TRUE(has(text, "data_parallel_shard_degree=4,\n")) << text;
  EXPECT_TRUE(has(text, "tensor_parallel_degree=2,\n")) << text;
  EXPECT_TRUE(has(text, "context_parallel_degree=1,\n")) << text;
  // 2 samples of 4,096 tokens per replica and micro-batch; 32 samples a step.
  EXPECT_TRUE(has(text, "num_tokens_per_microbatch_per_dp_rank=8192,\n")) << text;
  EXPECT_TRUE(has(text, "num_tokens_per_train_step=131072,\n")) << text;
  EXPECT_TRUE(has(text, "max_context_length=4096,\n")) << text;
  EXPECT_TRUE(has(text, "config.activation_checkpoint = None\n")) << text;
  // No TOML and no key torchtitan dropped.
  EXPECT_FALSE(has(text, "local_batch_size")) << text;
  EXPECT_FALSE(has(text, "context_parallel_rotate_method")) << text;
}

TEST(TorchtitanConfig, TheModelIsLlamaWithTheModelsOwnDimensions) {
  const frontend::TransformerConfig model = llama2();
  const std::string text = moduleOf(fsdpConfig(), model);
  EXPECT_TRUE(has(text, "dim, vocab = 4096, 32000\n")) << text;
  EXPECT_TRUE(has(text, "n_layers=32,\n")) << text;
  EXPECT_TRUE(has(text, "n_heads=32,\n")) << text;
  EXPECT_TRUE(has(text, "n_kv_heads=32,\n")) << text;
  EXPECT_TRUE(has(text, "hidden_dim=11008,\n")) << text;
  EXPECT_TRUE(has(text, "theta=10000)")) << text;
  EXPECT_TRUE(has(text, "enable_weight_tying=False,\n")) << text;
  EXPECT_TRUE(has(text, "llama3.llama3_configs[\"autopar\"] = autopar_model\n")) << text;
  EXPECT_TRUE(has(text, "config.model_spec = llama3.model_registry(\"autopar\")\n")) << text;
  // Llama 2's tokenizer is not the recipe's: the module says so.
  EXPECT_TRUE(has(text, "vocabulary of 32000 set config.hf_assets_path")) << text;
}

TEST(TorchtitanConfig, Llama3ScalingIsTorchtitansLlamaScaling) {
  frontend::TransformerConfig model = llama2();
  model.ropeBase = 500000;
  model.ropeScaling = {.type = "llama3", .factor = 8};
  const std::string text = moduleOf(fsdpConfig(), model);
  EXPECT_TRUE(has(text, "theta=500000, scaling=\"llama\", scaling_factor=8")) << text;
  model.ropeScaling.type = "yarn";
  EXPECT_FALSE(torchtitanConfig(fsdpConfig(), model).ok());
}

TEST(TorchtitanConfig, PipelineRecomputeFloat8AndAsyncTensorParallel) {
  ir::TrainingSetup config = fsdpConfig();
  config.pp = 2;
  config.vpp = 2;
  config.dp = 2;
  config.recompute = ir::Recompute::kFull;
  config.precision = "fp8";
  config.codePath.tpCommOverlap = true;
  const std::string text = moduleOf(config, llama2());
  EXPECT_TRUE(has(text, "pipeline_parallel_schedule=\"Interleaved1F1B\",\n")) << text;
  EXPECT_TRUE(has(text, "num_pp_microbatches=8,\n")) << text;  // 32 / (DP 2 x MBS 2)
  EXPECT_TRUE(has(text, "config.activation_checkpoint = FullAC.Config()\n")) << text;
  EXPECT_TRUE(has(text, "Float8LinearConverter.Config(")) << text;
  EXPECT_TRUE(has(text, "model_registry(\"autopar\", converters=converters)")) << text;
  EXPECT_TRUE(has(text, "CompileConfig(enable=True, enable_async_tensor_parallel=True)")) << text;
}

TEST(TorchtitanConfig, AModelThatIsNotALlamaIsRefusedInOneLine) {
  auto gpt3 = frontend::transformerPreset("gpt3-175b");
  ASSERT_TRUE(gpt3.ok());
  auto text = torchtitanConfig(fsdpConfig(), *gpt3);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message.find('\n'), std::string::npos);
  EXPECT_TRUE(has(text.error().message, "torchtitan's llama3 model does not"))
      << text.error().message;
}

TEST(TorchtitanConfig, TheSummaryIsTheModulesParallelismBatchAndCheckpointing) {
  const std::string summary = torchtitanSummary(fsdpConfig(), 4096);
  EXPECT_EQ(summary,
            "ParallelismConfig(data_parallel_replicate_degree=1, data_parallel_shard_degree=4, "
            "tensor_parallel_degree=2, pipeline_parallel_degree=1, context_parallel_degree=1)\n"
            "TrainingConfig(num_tokens_per_microbatch_per_dp_rank=8192, "
            "num_tokens_per_train_step=131072, max_context_length=4096)\n"
            "activation_checkpoint = None\n");
}

}  // namespace
}  // namespace autopar::exporters
