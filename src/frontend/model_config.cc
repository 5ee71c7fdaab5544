#include "frontend/model_config.h"

#include <fmt/format.h>

#include "util/json_fields.h"

namespace autopar::frontend {

using autopar::json::checkObject;
using autopar::json::childPath;
using autopar::json::jsonTypeName;
using autopar::json::readBool;
using autopar::json::readLabel;
using autopar::json::readNumber;
using autopar::json::readPositiveInt;
using autopar::json::readString;
using autopar::json::requireField;

namespace {

using nlohmann::json;

/// Reads the fields of a config document; the first error wins and later reads are skipped.
class Fields {
 public:
  /// `path` names the document inside its file ("vision_config"), "" at the top.
  explicit Fields(const json& document, std::string path = "")
      : document_(document), path_(std::move(path)) {}

  int64_t positive(std::string_view key) {
    if (!status_) return 0;
    auto field = requireField(document_, path_, key);
    if (!field) return fail(field.error()), 0;
    auto value = readPositiveInt(**field, childPath(path_, key));
    if (!value) return fail(value.error()), 0;
    return *value;
  }
  int64_t positiveOr(std::string_view key, int64_t fallback) {
    return has(key) ? positive(key) : fallback;
  }
  bool flagOr(std::string_view key, bool fallback) {
    if (!status_ || !has(key)) return fallback;
    auto value = readBool(document_.at(std::string(key)), childPath(path_, key));
    if (!value) return fail(value.error()), fallback;
    return *value;
  }
  double numberOr(std::string_view key, double fallback) {
    if (!status_ || !has(key)) return fallback;
    auto value = readNumber(document_.at(std::string(key)), childPath(path_, key));
    if (!value) return fail(value.error()), fallback;
    return *value;
  }
  std::string stringOr(std::string_view key, const std::string& fallback) {
    if (!status_ || !has(key)) return fallback;
    auto value = readString(document_.at(std::string(key)), childPath(path_, key));
    if (!value) return fail(value.error()), fallback;
    return *value;
  }
  /// A name the outputs repeat (readLabel: no control characters, bounded).
  std::string labelOr(std::string_view key, const std::string& fallback) {
    if (!status_ || !has(key)) return fallback;
    auto value = readLabel(document_.at(std::string(key)), childPath(path_, key));
    if (!value) return fail(value.error()), fallback;
    return *value;
  }
  [[nodiscard]] bool has(std::string_view key) const {
    return document_.contains(std::string(key)) && !document_.at(std::string(key)).is_null();
  }
  [[nodiscard]] const Status& status() const { return status_; }
  void reject(const std::string& message) { fail(Error{message}); }
  /// The field's path in the file, for messages: "rope_scaling.factor".
  [[nodiscard]] std::string where(std::string_view key) const { return childPath(path_, key); }

 private:
  void fail(const Error& error) {
    if (status_) status_ = error;
  }
  const json& document_;
  std::string path_;
  Status status_;
};

/// Patch tokens per sample when a config does not say: one 448 x 448 image in 14-pixel patches.
constexpr int64_t kDefaultPatches = 1024;

/// Qwen2-VL's vision_config: depth, embed_dim, num_heads, mlp_ratio, in_chans, patch_size,
/// temporal_patch_size and spatial_merge_size.
Status readQwen2VisionConfig(const json& document, TransformerConfig& config) {
  auto vision = requireField(document, "", "vision_config");
  if (!vision) return vision.error();
  if (!(*vision)->is_object()) {
    return Error{fmt::format("vision_config: expected an object, got {}", jsonTypeName(**vision))};
  }
  Fields fields(**vision, "vision_config");
  auto& v = config.vision;
  v.layers = fields.positive("depth");
  v.hidden = fields.positive("embed_dim");
  v.heads = fields.positive("num_heads");
  v.ffn = static_cast<int64_t>(fields.numberOr("mlp_ratio", 4) * static_cast<double>(v.hidden));
  const int64_t patch = fields.positiveOr("patch_size", 14);
  v.patchInput = fields.positiveOr("in_chans", 3) * fields.positiveOr("temporal_patch_size", 2) *
                 patch * patch;
  v.merge = fields.positiveOr("spatial_merge_size", 2);
  v.patches = kDefaultPatches;
  return fields.status();
}

/// A number of `fields` at `key` in (0, `most`], or `fallback` when absent.
double boundedNumber(Fields& fields, std::string_view key, double fallback, double most) {
  const double value = fields.numberOr(key, fallback);
  if (fields.status() && !(value > 0 && value <= most)) {
    fields.reject(fmt::format("{}: {}: expected a positive number up to {:g}", fields.where(key),
                              value, most));
  }
  return value;
}

/// The rotary base at `baseKey` (rope_theta; GPT-NeoX's rotary_emb_base) and rope_scaling: null,
/// or an object naming its kind (rope_type, or type in older configs) with a factor, and for
/// Llama 3.1's "llama3" kind its frequency bands and original length.
Status readRope(const json& document, Fields& fields, std::string_view baseKey,
                TransformerConfig& config) {
  config.ropeBase = boundedNumber(fields, baseKey, 10000, 1e12);
  if (!fields.status() || !fields.has("rope_scaling")) return fields.status();
  const json& scaling = document.at("rope_scaling");
  if (!scaling.is_object()) {
    return Error{
        fmt::format("rope_scaling: expected an object or null, got {}", jsonTypeName(scaling))};
  }
  Fields scalingFields(scaling, "rope_scaling");
  TransformerConfig::RopeScaling& rope = config.ropeScaling;
  rope.type = scalingFields.stringOr("rope_type", scalingFields.stringOr("type", ""));
  if (scalingFields.status() && rope.type.empty()) {
    return Error{
        "rope_scaling.rope_type: missing; expected the scaling's kind (llama3, linear, "
        "dynamic, yarn, ...)"};
  }
  rope.factor = boundedNumber(scalingFields, "factor", 1, 1e6);
  if (rope.type == "llama3") {
    rope.lowFrequencyFactor = boundedNumber(scalingFields, "low_freq_factor", 1, 1e6);
    rope.highFrequencyFactor = boundedNumber(scalingFields, "high_freq_factor", 4, 1e6);
    rope.originalPositions = scalingFields.positiveOr("original_max_position_embeddings", 8192);
  }
  return scalingFields.status();
}

void llamaStyle(TransformerConfig& config) {
  config.mlp = TransformerConfig::Mlp::kSwiGLU;
  config.norm = TransformerConfig::Norm::kRMSNorm;
  config.position = TransformerConfig::Position::kRotary;
}

void gptStyle(TransformerConfig& config) {
  config.mlp = TransformerConfig::Mlp::kGeLU;
  config.norm = TransformerConfig::Norm::kLayerNorm;
  config.position = TransformerConfig::Position::kLearned;
  config.linearBias = true;
}

/// The dimensions under the field names llama, qwen2, mistral, baichuan and gpt_neox share.
void readDimensions(Fields& fields, TransformerConfig& config, const std::string& sequenceKey) {
  config.layers = fields.positive("num_hidden_layers");
  config.hidden = fields.positive("hidden_size");
  config.ffn = fields.positive("intermediate_size");
  config.heads = fields.positive("num_attention_heads");
  config.kvHeads = fields.positiveOr("num_key_value_heads", config.heads);
  config.vocab = fields.positive("vocab_size");
  config.seq = fields.positive(sequenceKey);
  config.tiedEmbeddings = fields.flagOr("tie_word_embeddings", false);
  // The builder's head size is hidden / heads; configs that set another (Mistral-Nemo) are not
  // built wrong silently.
  const int64_t headDim = fields.positiveOr("head_dim", 0);
  if (headDim > 0 && config.heads > 0 && headDim * config.heads != config.hidden) {
    fields.reject(
        fmt::format("head_dim: {} differs from hidden_size / num_attention_heads = {}; "
                    "a separate head size is not supported",
                    headDim, config.hidden / config.heads));
  }
}

void readLlamaFields(Fields& fields, TransformerConfig& config, const std::string& sequenceKey) {
  llamaStyle(config);
  readDimensions(fields, config, sequenceKey);
  config.normEpsilon = fields.numberOr("rms_norm_eps", 1e-6);
}

Expected<TransformerConfig> fromHuggingFace(const json& document, Fields& fields) {
  TransformerConfig config;
  const std::string type = fields.labelOr("model_type", "");
  config.name = fields.labelOr("_name_or_path", type);
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen2_vl") {
    readLlamaFields(fields, config, "max_position_embeddings");
    config.qkvBias = type == "qwen2" || type == "qwen2_vl";
    if (type == "qwen2_vl") {
      if (auto status = readQwen2VisionConfig(document, config); !status) return status.error();
    }
  } else if (type == "mixtral") {
    // Mixtral's sliding_window (4096 in the first release, null since) only masks attention
    // beyond the window; it is ignored: attention is costed causal over the whole sequence.
    readLlamaFields(fields, config, "max_position_embeddings");
    config.experts = fields.positive("num_local_experts");
    config.topK = fields.positive("num_experts_per_tok");
  } else if (type == "baichuan") {
    readLlamaFields(
        fields, config,
        fields.has("model_max_length") ? "model_max_length" : "max_position_embeddings");
    // Baichuan 2 13B (40 layers) replaced rotary positions with ALiBi; its config.json has no
    // field saying so, only its modelling code.
    if (config.layers == 40) config.position = TransformerConfig::Position::kAlibi;
  } else if (type == "gpt2") {
    gptStyle(config);
    config.layers = fields.positive("n_layer");
    config.hidden = fields.positive("n_embd");
    config.heads = fields.positive("n_head");
    config.kvHeads = config.heads;
    config.ffn = fields.positiveOr("n_inner", 4 * config.hidden);
    config.vocab = fields.positive("vocab_size");
    config.seq = fields.positive("n_positions");
    config.tiedEmbeddings = fields.flagOr("tie_word_embeddings", true);
    config.normEpsilon = fields.numberOr("layer_norm_epsilon", 1e-5);
  } else if (type == "gpt_neox") {
    gptStyle(config);
    config.position = TransformerConfig::Position::kRotary;
    readDimensions(fields, config, "max_position_embeddings");
    config.normEpsilon = fields.numberOr("layer_norm_eps", 1e-5);
  } else {
    return Error{fmt::format(
        "model_type: '{}' is not supported yet; supported: llama, qwen2, qwen2_vl, mistral, "
        "mixtral, baichuan, gpt2, gpt_neox",
        type)};
  }
  if (!fields.status()) return fields.status().error();
  if (config.position == TransformerConfig::Position::kRotary) {
    const std::string_view baseKey = type == "gpt_neox" ? "rotary_emb_base" : "rope_theta";
    if (auto status = readRope(document, fields, baseKey, config); !status) return status.error();
  }
  return config;
}

/// The dimensions JSON's "vision" object.
Status readVisionDimensions(const json& document, TransformerConfig& config) {
  if (auto status = checkObject(document, "vision",
                                {"num_layers", "hidden_size", "ffn_hidden_size",
                                 "num_attention_heads", "patches", "patch_input", "merge"});
      !status) {
    return status;
  }
  Fields fields(document, "vision");
  auto& v = config.vision;
  v.layers = fields.positive("num_layers");
  v.hidden = fields.positive("hidden_size");
  v.ffn = fields.positive("ffn_hidden_size");
  v.heads = fields.positive("num_attention_heads");
  v.patches = fields.positiveOr("patches", kDefaultPatches);
  v.patchInput = fields.positiveOr("patch_input", 3 * 2 * 14 * 14);
  v.merge = fields.positiveOr("merge", 2);
  return fields.status();
}

Expected<TransformerConfig> fromDimensions(const json& document, Fields& fields) {
  if (auto status =
          checkObject(document, "",
                      {"name", "num_layers", "hidden_size", "ffn_hidden_size",
                       "num_attention_heads", "num_kv_heads", "vocab_size", "seq_length", "swiglu",
                       "tied_embeddings", "hidden_dropout", "vision", "num_experts", "moe_top_k"});
      !status) {
    return status.error();
  }
  TransformerConfig config;
  config.name = fields.labelOr("name", "transformer");
  auto swiglu = requireField(document, "", "swiglu");
  if (!swiglu) return swiglu.error();
  fields.flagOr("swiglu", false) ? llamaStyle(config) : gptStyle(config);
  config.layers = fields.positive("num_layers");
  config.hidden = fields.positive("hidden_size");
  config.ffn = fields.positive("ffn_hidden_size");
  config.heads = fields.positive("num_attention_heads");
  config.kvHeads = fields.positiveOr("num_kv_heads", config.heads);
  config.vocab = fields.positive("vocab_size");
  config.seq = fields.positive("seq_length");
  config.tiedEmbeddings = fields.flagOr("tied_embeddings", false);
  if (fields.has("num_experts") || fields.has("moe_top_k")) {
    // Megatron-LM's --num-experts and --moe-router-topk: both or neither.
    config.experts = fields.positive("num_experts");
    config.topK = fields.positive("moe_top_k");
  }
  config.hiddenDropout = fields.numberOr("hidden_dropout", 0.0);
  if (config.hiddenDropout < 0 || config.hiddenDropout >= 1) {
    fields.reject(
        fmt::format("hidden_dropout: expected a rate in [0, 1), got {}", config.hiddenDropout));
  }
  if (!fields.status()) return fields.status().error();
  if (fields.has("vision")) {
    if (auto status = readVisionDimensions(document.at("vision"), config); !status) {
      return status.error();
    }
  }
  return config;
}

}  // namespace

bool isModelConfig(const json& document) {
  return document.is_object() &&
         (document.contains("model_type") || document.contains("num_layers"));
}

Expected<TransformerConfig> modelConfigFromJson(const json& document) {
  if (!isModelConfig(document)) {
    return Error{"expected an object with 'model_type' (Hugging Face config.json) or 'num_layers'"};
  }
  Fields fields(document);
  auto config = document.contains("model_type") ? fromHuggingFace(document, fields)
                                                : fromDimensions(document, fields);
  if (!config) return config;
  if (auto status = validateTransformerConfig(*config); !status) return status.error();
  return config;
}

}  // namespace autopar::frontend
