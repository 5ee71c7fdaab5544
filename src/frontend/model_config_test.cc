#include "frontend/model_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "frontend/model_presets.h"
#include "util/json_fields.h"

namespace autopar::frontend {

using autopar::json::parseJsonText;
namespace {

using nlohmann::json;

TEST(ModelConfig, LlamaConfigJsonMatchesThePreset) {
  // meta-llama/Llama-2-7b-hf config.json, abridged to the fields that matter plus a few others.
  const json document = {{"architectures", {"LlamaForCausalLM"}},
                         {"model_type", "llama"},
                         {"hidden_size", 4096},
                         {"intermediate_size", 11008},
                         {"num_attention_heads", 32},
                         {"num_hidden_layers", 32},
                         {"num_key_value_heads", 32},
                         {"max_position_embeddings", 4096},
                         {"rms_norm_eps", 1e-5},
                         {"tie_word_embeddings", false},
                         {"torch_dtype", "float16"},
                         {"vocab_size", 32000}};
  auto config = modelConfigFromJson(document);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(transformerParameterCount(*config), 6'738'415'616);
  auto preset = transformerPreset("llama2-7b");
  ASSERT_TRUE(preset.ok());
  EXPECT_EQ(config->seq, preset->seq);
  EXPECT_EQ(config->mlp, TransformerConfig::Mlp::kSwiGLU);
}

TEST(ModelConfig, Qwen2HasQkvBiasAndGqa) {
  // Qwen/Qwen2-7B config.json.
  const json document = {{"model_type", "qwen2"},
                         {"hidden_size", 3584},
                         {"intermediate_size", 18944},
                         {"num_attention_heads", 28},
                         {"num_hidden_layers", 28},
                         {"num_key_value_heads", 4},
                         {"max_position_embeddings", 32768},
                         {"vocab_size", 152064},
                         {"tie_word_embeddings", false}};
  auto config = modelConfigFromJson(document);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(config->qkvBias);
  EXPECT_EQ(config->kvHeads, 4);
  // Qwen2-7B's published size: 7,615,616,512 parameters.
  EXPECT_EQ(transformerParameterCount(*config), 7'615'616'512);
}

TEST(ModelConfig, Gpt2SmallHasItsPublishedSize) {
  // openai-community/gpt2 config.json: 124,439,808 parameters with the tied head.
  const json document = {{"model_type", "gpt2"}, {"n_layer", 12},
                         {"n_embd", 768},        {"n_head", 12},
                         {"n_positions", 1024},  {"vocab_size", 50257},
                         {"n_inner", nullptr},   {"layer_norm_epsilon", 1e-5}};
  auto config = modelConfigFromJson(document);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->ffn, 3072);
  EXPECT_TRUE(config->tiedEmbeddings);
  EXPECT_EQ(transformerParameterCount(*config), 124'439'808);
}

TEST(ModelConfig, DimensionsObjectBuildsLlamaOrGptStyle) {
  json document = {{"num_layers", 2},        {"hidden_size", 256},
                   {"ffn_hidden_size", 688}, {"num_attention_heads", 8},
                   {"vocab_size", 1024},     {"seq_length", 128},
                   {"swiglu", true}};
  auto llama = modelConfigFromJson(document);
  ASSERT_TRUE(llama.ok()) << llama.error().message;
  EXPECT_EQ(llama->kvHeads, 8);
  EXPECT_EQ(llama->norm, TransformerConfig::Norm::kRMSNorm);
  document["swiglu"] = false;
  auto gpt = modelConfigFromJson(document);
  ASSERT_TRUE(gpt.ok());
  EXPECT_EQ(gpt->mlp, TransformerConfig::Mlp::kGeLU);
  EXPECT_TRUE(gpt->linearBias);
}

TEST(ModelConfig, Qwen2VlReadsItsVisionTower) {
  std::ifstream file(std::string(AUTOPAR_SOURCE_DIR) + "/examples/models/qwen2-vl-72b-config.json");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto document = parseJsonText(text);
  ASSERT_TRUE(document.ok()) << document.error().message;
  auto config = modelConfigFromJson(*document);
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto preset = transformerPreset("qwen2-vl-72b");
  ASSERT_TRUE(preset.ok());
  EXPECT_EQ(config->vision, preset->vision);
  EXPECT_TRUE(config->qkvBias);
  EXPECT_EQ(config->kvHeads, 8);
  json broken = *document;
  broken["vision_config"]["depth"] = "32";
  EXPECT_EQ(modelConfigFromJson(broken).error().message,
            "vision_config.depth: expected an integer, got string");
  broken.erase("vision_config");
  EXPECT_EQ(modelConfigFromJson(broken).error().message,
            "top level: missing required field 'vision_config'");
}

json readExample(const std::string& name) {
  std::ifstream file(std::string(AUTOPAR_SOURCE_DIR) + "/examples/models/" + name);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto document = parseJsonText(text);
  EXPECT_TRUE(document.ok()) << document.error().message;
  return document.ok() ? *document : json{};
}

// mistralai/Mixtral-8x7B-v0.1's config.json: 46.7B parameters, 12.9B of them used per token
// (Jiang et al. 2024, "Mixtral of Experts": 47B total, 13B active).
TEST(ModelConfig, MixtralHasItsPublishedSizes) {
  auto config = modelConfigFromJson(readExample("mixtral-8x7b-config.json"));
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->experts, 8);
  EXPECT_EQ(config->topK, 2);
  EXPECT_EQ(config->kvHeads, 8);
  EXPECT_EQ(transformerParameterCount(*config), 46'702'792'704);
  EXPECT_EQ(activeParameterCount(*config), 12'879'925'248);
  auto preset = transformerPreset("mixtral-8x7b");
  ASSERT_TRUE(preset.ok()) << preset.error().message;
  EXPECT_EQ(transformerParameterCount(*preset), transformerParameterCount(*config));
  json broken = readExample("mixtral-8x7b-config.json");
  broken.erase("num_experts_per_tok");
  EXPECT_EQ(modelConfigFromJson(broken).error().message,
            "top level: missing required field 'num_experts_per_tok'");
  broken["num_experts_per_tok"] = 9;
  EXPECT_EQ(modelConfigFromJson(broken).error().message,
            "mixtral: topK: 9 experts per token of 8: expected 1 to the experts");
}

TEST(ModelConfig, DimensionsTakeExperts) {
  json dims = {{"num_layers", 2},          {"hidden_size", 256}, {"ffn_hidden_size", 688},
               {"num_attention_heads", 8}, {"vocab_size", 1024}, {"seq_length", 128},
               {"swiglu", true},           {"num_experts", 4},   {"moe_top_k", 2}};
  auto config = modelConfigFromJson(dims);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->experts, 4);
  EXPECT_EQ(config->topK, 2);
  // Two experts of four per token: the active count drops two experts' MLPs per layer.
  EXPECT_EQ(transformerParameterCount(*config) - activeParameterCount(*config),
            2 * 2 * 3 * 256 * 688);
  dims.erase("moe_top_k");
  EXPECT_EQ(modelConfigFromJson(dims).error().message,
            "top level: missing required field 'moe_top_k'");
  dims["moe_top_k"] = 1;
  dims["seq_length"] = 126;  // 126 tokens do not spread evenly over 4 experts
  EXPECT_EQ(modelConfigFromJson(dims).error().message,
            "transformer: seq: 126 tokens x topK 1 do not spread evenly over 4 experts");
}

TEST(ModelConfig, DimensionsTakeAVisionObject) {
  const json dims = {{"num_layers", 2},
                     {"hidden_size", 256},
                     {"ffn_hidden_size", 688},
                     {"num_attention_heads", 4},
                     {"vocab_size", 1024},
                     {"seq_length", 512},
                     {"swiglu", true},
                     {"vision",
                      {{"num_layers", 2},
                       {"hidden_size", 128},
                       {"ffn_hidden_size", 512},
                       {"num_attention_heads", 4},
                       {"patches", 64}}}};
  auto config = modelConfigFromJson(dims);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->vision.layers, 2);
  EXPECT_EQ(config->vision.patches, 64);
  EXPECT_EQ(config->vision.merge, 2);
  json bad = dims;
  bad["vision"]["layers"] = 2;
  EXPECT_NE(modelConfigFromJson(bad).error().message.find("vision: unknown field 'layers'"),
            std::string::npos);
}

TEST(ModelConfig, BadFieldsAreNamed) {
  json dims = {{"num_layers", 2},        {"hidden_size", 256},
               {"ffn_hidden_size", 688}, {"num_attention_heads", 0},
               {"vocab_size", 1024},     {"seq_length", 128},
               {"swiglu", true}};
  EXPECT_EQ(modelConfigFromJson(dims).error().message,
            "num_attention_heads: expected a positive integer, got 0");
  dims["num_attention_heads"] = 8;
  dims.erase("swiglu");
  EXPECT_EQ(modelConfigFromJson(dims).error().message,
            "top level: missing required field 'swiglu'");
  dims["swiglu"] = true;
  dims["hidden"] = 3;
  EXPECT_NE(modelConfigFromJson(dims).error().message.find("unknown field 'hidden'"),
            std::string::npos);
  const json bert = {{"model_type", "bert"}, {"hidden_size", 768}};
  EXPECT_EQ(modelConfigFromJson(bert).error().message,
            "model_type: 'bert' is not supported yet; supported: llama, qwen2, qwen2_vl, mistral, "
            "mixtral, baichuan, gpt2, gpt_neox");
  const json nemo = {
      {"model_type", "mistral"},         {"hidden_size", 5120},     {"intermediate_size", 14336},
      {"num_attention_heads", 32},       {"num_hidden_layers", 40}, {"num_key_value_heads", 8},
      {"max_position_embeddings", 1024}, {"vocab_size", 131072},    {"head_dim", 128}};
  EXPECT_EQ(modelConfigFromJson(nemo).error().message,
            "head_dim: 128 differs from hidden_size / num_attention_heads = 160; a separate head "
            "size is not supported");
  const json llama = {{"model_type", "llama"}, {"hidden_size", 4096}};
  EXPECT_EQ(modelConfigFromJson(llama).error().message,
            "top level: missing required field 'num_hidden_layers'");
}

TEST(ModelConfig, RotaryBaseAndScalingAreRead) {
  json llama = {{"model_type", "llama"},           {"hidden_size", 4096},
                {"intermediate_size", 14336},      {"num_attention_heads", 32},
                {"num_hidden_layers", 32},         {"num_key_value_heads", 8},
                {"max_position_embeddings", 8192}, {"vocab_size", 128256}};
  auto config = modelConfigFromJson(llama);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->ropeBase, 10000);  // Hugging Face's default
  EXPECT_TRUE(config->ropeScaling.type.empty());
  // meta-llama/Llama-3.1-8B: rope_theta 500000 and Llama 3.1's rescaling.
  llama["rope_theta"] = 500000.0;
  llama["rope_scaling"] = {{"factor", 8.0},
                           {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0},
                           {"original_max_position_embeddings", 8192},
                           {"rope_type", "llama3"}};
  config = modelConfigFromJson(llama);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->ropeBase, 500000);
  EXPECT_EQ(config->ropeScaling, (TransformerConfig::RopeScaling{.type = "llama3", .factor = 8}));
  // Older configs name the kind "type" (Qwen2-VL's mrope has no factor).
  llama["rope_scaling"] = {{"type", "mrope"}, {"mrope_section", {16, 24, 24}}};
  config = modelConfigFromJson(llama);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->ropeScaling.type, "mrope");
  EXPECT_EQ(config->ropeScaling.factor, 1);

  llama["rope_theta"] = -1;
  EXPECT_EQ(modelConfigFromJson(llama).error().message,
            "rope_theta: -1: expected a positive number up to 1e+12");
  llama["rope_theta"] = 1e6;
  llama["rope_scaling"] = "llama3";
  EXPECT_EQ(modelConfigFromJson(llama).error().message,
            "rope_scaling: expected an object or null, got string");
  llama["rope_scaling"] = {{"factor", 0}, {"rope_type", "linear"}};
  EXPECT_EQ(modelConfigFromJson(llama).error().message,
            "rope_scaling.factor: 0: expected a positive number up to 1e+06");
  llama["rope_scaling"] = {{"factor", 2}};
  EXPECT_NE(modelConfigFromJson(llama).error().message.find("rope_scaling.rope_type: missing"),
            std::string::npos);
}

}  // namespace
}  // namespace autopar::frontend
