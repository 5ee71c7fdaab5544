#include "frontend/mindformers_model.h"

#include <gtest/gtest.h>

#include <string>

#include "frontend/mindformers_yaml.h"
#include "frontend/model_presets.h"

namespace autopar::frontend {
namespace {

std::string errorOf(const std::string& text) {
  auto config = parseMindFormersYaml(text, "run.yaml");
  return config ? "<ok>" : config.error().message;
}

TransformerConfig modelOf(const std::string& text) {
  auto config = parseMindFormersYaml(text, "configs/run.yaml");
  EXPECT_TRUE(config) << config.error().message;
  if (!config || !config->model) {
    ADD_FAILURE() << "no model in the yaml";
    return {};
  }
  return *config->model;
}

TEST(LlamaFfnSize, FollowsLlamaRoundingRule) {
  EXPECT_EQ(llamaFfnSize(4096, 256, std::nullopt), 11008);  // LLaMA2-7B
  EXPECT_EQ(llamaFfnSize(5120, 256, std::nullopt), 13824);  // LLaMA2-13B
  EXPECT_EQ(llamaFfnSize(8192, 4096, 1.3), 28672);          // LLaMA2-70B
  EXPECT_EQ(llamaFfnSize(6, 1, std::nullopt), 16);          // int(2 * 24 / 3)
}

TEST(MindFormersModel, PresetWithOverrides) {
  const TransformerConfig model = modelOf(R"(
model:
  model_config:
    type: LlamaConfig
    model_preset: llama2-7b
    seq_length: 2048
    compute_dtype: "float16"
    rms_norm_eps: 1.0e-6
)");
  auto preset = transformerPreset("llama2-7b");
  ASSERT_TRUE(preset);
  EXPECT_EQ(model.name, "llama2-7b");
  EXPECT_EQ(model.seq, 2048);
  EXPECT_EQ(model.dtype, ir::DType::kF16);
  EXPECT_DOUBLE_EQ(model.normEpsilon, 1e-6);
  EXPECT_EQ(model.layers, preset->layers);
  EXPECT_EQ(model.hidden, preset->hidden);
  EXPECT_EQ(model.ffn, preset->ffn);
  EXPECT_EQ(model.vocab, preset->vocab);
  EXPECT_EQ(model.microBatch, 1);
  EXPECT_FALSE(model.parallel) << "the yaml's parallel_config is the plan's, not the model's";
}

TEST(MindFormersModel, DimensionsWithoutPresetUseMindFormersNames) {
  // MindFormers' llama2-7b model_config: no intermediate_size, multiple_of 256, n_kv_heads null.
  const TransformerConfig model = modelOf(R"(
model:
  model_config:
    batch_size: 1
    seq_length: 4096
    hidden_size: 4096
    num_layers: 32
    num_heads: 32
    n_kv_heads:
    vocab_size: 32000
    multiple_of: 256
    rms_norm_eps: 1.0e-5
)");
  EXPECT_EQ(model.name, "run");
  EXPECT_EQ(model.layers, 32);
  EXPECT_EQ(model.heads, 32);
  EXPECT_EQ(model.kvHeads, 32);
  EXPECT_EQ(model.ffn, 11008);
  EXPECT_EQ(transformerParameterCount(model), 6'738'415'616);
}

TEST(MindFormersModel, IntermediateSizeWinsOverMultipleOf) {
  const TransformerConfig model = modelOf(R"(
model:
  model_config: {num_layers: 2, hidden_size: 64, num_heads: 4, n_kv_heads: 2,
                 intermediate_size: 100, multiple_of: 256, vocab_size: 128, seq_length: 16}
)");
  EXPECT_EQ(model.ffn, 100);
  EXPECT_EQ(model.kvHeads, 2);
}

TEST(MindFormersModel, ExampleConfigs) {
  const std::string dir = std::string(AUTOPAR_SOURCE_DIR) + "/examples/configs/";
  auto seven = loadMindFormersYaml(dir + "llama2_7b_auto_parallel.yaml");
  ASSERT_TRUE(seven) << seven.error().message;
  ASSERT_TRUE(seven->model.has_value());
  EXPECT_EQ(transformerParameterCount(*seven->model), 6'738'415'616);
  EXPECT_EQ(seven->parallel.parallelMode, ParallelMode::kAuto);

  auto seventy = loadMindFormersYaml(dir + "llama2_70b_semi_auto_pipeline.yaml");
  ASSERT_TRUE(seventy) << seventy.error().message;
  ASSERT_TRUE(seventy->model.has_value());
  EXPECT_EQ(seventy->model->ffn, 28672);
  EXPECT_EQ(seventy->model->kvHeads, 8);
  EXPECT_EQ(transformerParameterCount(*seventy->model), 68'976'648'192);
  EXPECT_TRUE(checkDeviceCount(*seventy, 64));
  EXPECT_EQ(globalBatchSize(*seventy, 64), 32);
}

TEST(MindFormersModel, NoModelWithoutPresetOrDimensions) {
  auto config = parseMindFormersYaml("model:\n  model_config:\n    type: LlamaConfig\n", "r.yaml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_FALSE(config->model.has_value());
}

TEST(MindFormersModel, Errors) {
  EXPECT_EQ(errorOf("model:\n  model_config:\n    num_layers: 2\n    hidden_size: 64\n"),
            "run.yaml: model.model_config.num_heads: missing; give it or name a model_preset to "
            "fill missing dimensions");
  EXPECT_EQ(errorOf("model:\n  model_config: {num_layers: 2, hidden_size: 64, num_heads: 4,"
                    " vocab_size: 128, seq_length: 16}\n"),
            "run.yaml: model.model_config.intermediate_size (or multiple_of): missing; give it or "
            "name a model_preset to fill missing dimensions");
  EXPECT_EQ(errorOf("model:\n  model_config:\n    num_heads: many\n"),
            "run.yaml: model.model_config.num_heads: expected a positive integer, got 'many'");
  EXPECT_EQ(errorOf("model:\n  model_config:\n    model_preset: llama9\n")
                .rfind("run.yaml: model.model_config.model_preset: unknown model preset 'llama9' "
                       "(known: llama2-7b, ",
                       0),
            0u);
  EXPECT_EQ(errorOf("model:\n  model_config:\n    model_preset: llama2-7b\n"
                    "    compute_dtype: int8\n"),
            "run.yaml: model.model_config.compute_dtype: expected \"float16\", \"bfloat16\" or "
            "\"float32\", got 'int8'");
  EXPECT_EQ(errorOf("model:\n  model_config:\n    model_preset: llama2-7b\n    n_kv_heads: 5\n"),
            "run.yaml: model.model_config: llama2-7b: kvHeads: heads 32 is not divisible by "
            "kvHeads 5");
  EXPECT_EQ(errorOf("model:\n  model_config:\n    model_preset: llama2-7b\n"
                    "    ffn_dim_multiplier: x\n"),
            "run.yaml: model.model_config.ffn_dim_multiplier: expected a positive number, got 'x'");
}

TEST(MindFormersFamily, ByTheArchClassElseByThePresetName) {
  EXPECT_EQ(mindformersFamily(std::string("QwenForCausalLM"), "x"), MindFormersFamily::kQwen);
  EXPECT_EQ(mindformersFamily(std::string("Baichuan7BV2ForCausalLM"), "x"),
            MindFormersFamily::kBaichuan2);
  EXPECT_EQ(mindformersFamily(std::string("LlamaForCausalLM"), "qwen-7b"),
            MindFormersFamily::kLlama);
  EXPECT_EQ(mindformersFamily(std::nullopt, "qwen-14b"), MindFormersFamily::kQwen);
  EXPECT_EQ(mindformersFamily(std::nullopt, "baichuan2-13b"), MindFormersFamily::kBaichuan2);
  EXPECT_EQ(mindformersFamily(std::nullopt, "llama2-7b"), MindFormersFamily::kLlama);
}

TEST(MindFormersFamily, VocabularySplitsFollowEachFamilysModelCode) {
  using Split = TransformerConfig::VocabSplit;
  struct Case {
    MindFormersFamily family;
    bool vocabEmbDp;
    Split head, loss;
  };
  const Case cases[] = {
      {MindFormersFamily::kLlama, true, Split::kWhole, Split::kByTp},
      {MindFormersFamily::kLlama, false, Split::kByTp, Split::kByTp},
      {MindFormersFamily::kQwen, true, Split::kWhole, Split::kAllDevices},
      {MindFormersFamily::kQwen, false, Split::kAllDevices, Split::kAllDevices},
      {MindFormersFamily::kBaichuan2, true, Split::kAllDevices, Split::kAllDevices},
      {MindFormersFamily::kBaichuan2, false, Split::kAllDevices, Split::kAllDevices},
  };
  for (const Case& c : cases) {
    TransformerConfig config;
    applyMindFormersVocabSplits(config, c.family, c.vocabEmbDp);
    EXPECT_EQ(config.headVocab, c.head) << static_cast<int>(c.family) << c.vocabEmbDp;
    EXPECT_EQ(config.lossVocab, c.loss) << static_cast<int>(c.family) << c.vocabEmbDp;
    EXPECT_EQ(config.embeddingTableWhole, c.vocabEmbDp);
  }
}

TEST(MindFormersFamily, ARunYamlsModelRunsOnItsFamilysCode) {
  using Split = TransformerConfig::VocabSplit;
  // vocab_emb_dp is MindFormers' default True; Baichuan2's NormHead splits the vocabulary anyway.
  TransformerConfig model = modelOf("model:\n  model_config:\n    model_preset: baichuan2-7b\n");
  EXPECT_EQ(model.headVocab, Split::kAllDevices);
  EXPECT_TRUE(model.embeddingTableWhole);
  model = modelOf(
      "parallel_config:\n  vocab_emb_dp: False\nmodel:\n  arch:\n    type: QwenForCausalLM\n"
      "  model_config:\n    model_preset: llama2-7b\n");
  EXPECT_EQ(model.headVocab, Split::kAllDevices);
  EXPECT_FALSE(model.embeddingTableWhole);
  model = modelOf("model:\n  model_config:\n    model_preset: llama2-7b\n");
  EXPECT_EQ(model.headVocab, Split::kWhole);
  EXPECT_EQ(
      errorOf("parallel_config:\n  vocab_emb_dp: maybe\n"),
      "run.yaml: parallel_config.vocab_emb_dp: expected a boolean (true or false), got 'maybe'");
}

}  // namespace
}  // namespace autopar::frontend
