#include "frontend/model_presets.h"

#include <fmt/format.h>

#include <algorithm>

namespace autopar::frontend {

namespace {

using Config = TransformerConfig;

/// A LLaMA-style decoder: RMSNorm, SwiGLU, rotary, untied head, no biases.
Config llamaStyle(std::string name, int64_t layers, int64_t hidden, int64_t heads, int64_t kvHeads,
                  int64_t ffn, int64_t vocab, int64_t seq, double epsilon) {
  Config config;
  config.name = std::move(name);
  config.layers = layers;
  config.hidden = hidden;
  config.heads = heads;
  config.kvHeads = kvHeads;
  config.ffn = ffn;
  config.vocab = vocab;
  config.seq = seq;
  config.normEpsilon = epsilon;
  return config;
}

/// A GPT-style decoder: LayerNorm, GeLU MLP, learned positions, biases on every projection,
/// head tied to the embedding, fp16 (the training type of GPT-3 and of PanGu-alpha on Ascend),
/// and hidden dropout 0.1 (Megatron-LM's GPT, --hidden-dropout default 0.1). The LLaMA-style
/// models train without dropout.
Config gptStyle(std::string name, int64_t layers, int64_t hidden, int64_t heads, int64_t ffn,
                int64_t vocab, int64_t seq) {
  Config config = llamaStyle(std::move(name), layers, hidden, heads, heads, ffn, vocab, seq, 1e-5);
  config.mlp = Config::Mlp::kGeLU;
  config.norm = Config::Norm::kLayerNorm;
  config.position = Config::Position::kLearned;
  config.tiedEmbeddings = true;
  config.linearBias = true;
  config.dtype = ir::DType::kF16;
  config.hiddenDropout = 0.1;
  return config;
}

Config withQkvBias(Config config) {
  config.qkvBias = true;
  return config;
}

/// A vision tower of `layers` ViT layers over 1024 patches of 14 x 14 pixels x 3 channels x 2
/// frames (one 448 x 448 image), 2 x 2 patches merged into one LLM token.
Config withVision(Config config, int64_t layers, int64_t hidden, int64_t heads, int64_t ffn) {
  config.vision = {layers, hidden, heads, ffn, 1024, 3 * 2 * 14 * 14, 2};
  return config;
}

/// Every layer's MLP a mixture of `experts` experts, `topK` per token.
Config withExperts(Config config, int64_t experts, int64_t topK) {
  config.experts = experts;
  config.topK = topK;
  return config;
}

/// Rotary positions of base `base` (rope_theta); LLaMA-style presets default to 10,000.
Config withRopeBase(Config config, double base) {
  config.ropeBase = base;
  return config;
}

Config withAlibi(Config config) {
  config.position = Config::Position::kAlibi;
  return config;
}

const std::vector<Config>& transformerPresets() {
  static const std::vector<Config> kPresets = {
      // meta-llama/Llama-2-{7b,13b,70b}-hf config.json: hidden_size, num_hidden_layers,
      // num_attention_heads, num_key_value_heads, intermediate_size, vocab_size 32000,
      // max_position_embeddings 4096, rms_norm_eps 1e-5; untied lm_head. Parameter counts
      // 6,738,415,616 / 13,015,864,320 / 68,976,648,192 (Touvron et al. 2023, the HF model cards).
      llamaStyle("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, 1e-5),
      llamaStyle("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096, 1e-5),
      llamaStyle("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096, 1e-5),
      // baichuan-inc/Baichuan2-{7B,13B}-Base config.json: vocab_size 125696,
      // model_max_length 4096, rms_norm_eps 1e-6. W_pack's fused q/k/v is split into three
      // projections here; the NormHead normalises lm_head.weight but adds no parameters.
      // Baichuan2-7B uses RoPE; Baichuan2-13B uses ALiBi, a per-head bias inside attention with
      // no parameters, so it has no rotary ops.
      llamaStyle("baichuan2-7b", 32, 4096, 32, 32, 11008, 125696, 4096, 1e-6),
      withAlibi(llamaStyle("baichuan2-13b", 40, 5120, 40, 40, 13696, 125696, 4096, 1e-6)),
      // Qwen/Qwen-{7B,14B} config.json: intermediate_size 22016 / 27392 is the sum of the two
      // SwiGLU input projections (w1, w2 are intermediate_size / 2 = 11008 / 13696 wide);
      // vocab_size 151936 / 152064; seq_length 8192 / 2048; layer_norm_epsilon 1e-6; c_attn has a
      // bias (the rest no_bias); untied lm_head.
      withQkvBias(llamaStyle("qwen-7b", 32, 4096, 32, 32, 11008, 151936, 8192, 1e-6)),
      withQkvBias(llamaStyle("qwen-14b", 40, 5120, 40, 40, 13696, 152064, 2048, 1e-6)),
      // MindFormers configs/pangualpha/run_pangualpha_{2_6b,13b}.yaml (Zeng et al. 2021):
      // hidden_size 2560 / 5120, num_layers 32 / 40, num_heads 32 / 40, ffn 4h, vocab_size 40000,
      // seq_length 1024. PanGu-alpha's last layer is a "top query" layer whose query comes from
      // an extra position table; it is modelled as a regular layer (1024*h fewer parameters).
      gptStyle("pangu-alpha-2.6b", 32, 2560, 32, 10240, 40000, 1024),
      gptStyle("pangu-alpha-13b", 40, 5120, 40, 20480, 40000, 1024),
      // GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, d_model 12288, 96 heads of 128,
      // n_ctx 2048, ffn 4*d_model. The GPT-2 BPE vocab of 50257 is padded to 51200 as Megatron-LM
      // does (--make-vocab-size-divisible-by 128 times tp 8 = 1024), so tp up to 8 divides it.
      gptStyle("gpt3-175b", 96, 12288, 96, 49152, 51200, 2048),
      // Qwen2-VL-72B with seed 003's dimensions (80 layers, hidden 8192, ffn 29568, 64 heads,
      // vocab 152064, seq 8192, a 32-layer ViT); Qwen/Qwen2-VL-72B-Instruct config.json for the
      // rest: num_key_value_heads 8, rms_norm_eps 1e-6, q/k/v biases, and vision_config depth 32,
      // embed_dim 1280, num_heads 16, mlp_ratio 4, patch_size 14, temporal_patch_size 2,
      // spatial_merge_size 2, rope_theta 1,000,000. The image is one 448 x 448 picture: 1024
      // patches, 256 tokens.
      withVision(withRopeBase(withQkvBias(llamaStyle("qwen2-vl-72b", 80, 8192, 64, 8, 29568, 152064,
                                                     8192, 1e-6)),
                              1e6),
                 32, 1280, 16, 5120),
      // InternVL2-8B (OpenGVLab config.json): InternLM2.5-7B (32 layers, hidden 4096, 32 heads,
      // 8 key/value heads, ffn 14336, vocab 92553 padded to 92672 as Megatron-LM's
      // --make-vocab-size-divisible-by 128 does) after InternViT-300M (24 layers, hidden 1024,
      // 16 heads, ffn 4096, 448 x 448 images, pixel shuffle 0.5 = 2 x 2 merge). InternViT's
      // learned position table and its projector's exact shapes are modelled by the common
      // vision tower (rotary, merger MLP), a difference of under 1% of the parameters.
      // InternLM2.5's
      // rope_theta is 1,000,000.
      withVision(
          withRopeBase(llamaStyle("internvl2-8b", 32, 4096, 32, 8, 14336, 92672, 8192, 1e-5), 1e6),
          24, 1024, 16, 4096),
      // mistralai/Mixtral-8x7B-v0.1 config.json (examples/models/mixtral-8x7b-config.json): 32
      // layers, hidden 4096, 32 heads, 8 key/value heads, 8 experts of intermediate_size 14336,
      // 2 per token, vocab 32000, rms_norm_eps 1e-5, rope_theta 1,000,000; 46,702,792,704
      // parameters, 12.9B active. Sequence 4096, as Megatron-LM's Mixtral example trains it (its
      // config.json allows 32768).
      withRopeBase(
          withExperts(llamaStyle("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096, 1e-5), 8, 2),
          1e6),
  };
  return kPresets;
}

constexpr const char* kFfnPreset = "ffn";

}  // namespace

const std::vector<std::string>& modelPresetNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& config : transformerPresets()) names.push_back(config.name);
    names.emplace_back(kFfnPreset);
    return names;
  }();
  return kNames;
}

Expected<TransformerConfig> transformerPreset(const std::string& name) {
  const auto& presets = transformerPresets();
  auto it = std::find_if(presets.begin(), presets.end(),
                         [&](const Config& config) { return config.name == name; });
  if (it != presets.end()) return *it;
  if (name == kFfnPreset) {
    return Error{fmt::format(
        "model preset '{}' is a feed-forward network, not a transformer; build it with buildFfn",
        name)};
  }
  return Error{fmt::format("unknown model preset '{}' (known: {})", name,
                           fmt::join(modelPresetNames(), ", "))};
}

Expected<ir::Graph> buildPresetGraph(const std::string& name, int64_t microBatch) {
  if (name == kFfnPreset) return buildFfn(microBatch);
  auto config = transformerPreset(name);
  if (!config) return config.error();
  config->microBatch = microBatch;
  return buildTransformer(*config);
}

}  // namespace autopar::frontend
