#include "frontend/model_config.h"

#include <fmt/format.h>

#include "frontend/json_fields.h"

namespace autopar::frontend {

namespace {

using nlohmann::json;

/// Reads the fields of a config document; the first error wins and later reads are skipped.
class Fields {
 public:
  explicit Fields(const json& document) : document_(document) {}

  int64_t positive(std::string_view key) {
    if (!status_) return 0;
    auto field = requireField(document_, "", key);
    if (!field) return fail(field.error()), 0;
    auto value = readPositiveInt(**field, std::string(key));
    if (!value) return fail(value.error()), 0;
    return *value;
  }
  int64_t positiveOr(std::string_view key, int64_t fallback) {
    return has(key) ? positive(key) : fallback;
  }
  bool flagOr(std::string_view key, bool fallback) {
    if (!status_ || !has(key)) return fallback;
    auto value = readBool(document_.at(std::string(key)), std::string(key));
    if (!value) return fail(value.error()), fallback;
    return *value;
  }
  double numberOr(std::string_view key, double fallback) {
    if (!status_ || !has(key)) return fallback;
    auto value = readNumber(document_.at(std::string(key)), std::string(key));
    if (!value) return fail(value.error()), fallback;
    return *value;
  }
  std::string stringOr(std::string_view key, const std::string& fallback) {
    if (!status_ || !has(key)) return fallback;
    auto value = readString(document_.at(std::string(key)), std::string(key));
    if (!value) return fail(value.error()), fallback;
    return *value;
  }
  [[nodiscard]] bool has(std::string_view key) const {
    return document_.contains(std::string(key)) && !document_.at(std::string(key)).is_null();
  }
  [[nodiscard]] const Status& status() const { return status_; }
  void reject(const std::string& message) { fail(Error{message}); }

 private:
  void fail(const Error& error) {
    if (status_) status_ = error;
  }
  const json& document_;
  Status status_;
};

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

Expected<TransformerConfig> fromHuggingFace(Fields& fields) {
  TransformerConfig config;
  const std::string type = fields.stringOr("model_type", "");
  config.name = fields.stringOr("_name_or_path", type);
  if (type == "llama" || type == "mistral" || type == "qwen2") {
    readLlamaFields(fields, config, "max_position_embeddings");
    config.qkvBias = type == "qwen2";
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
    const char* kind = type == "mixtral"    ? " (mixture of experts)"
                       : type == "qwen2_vl" ? " (vision tower + LLM)"
                                            : "";
    return Error{fmt::format(
        "model_type: '{}'{} is not supported yet; supported: llama, qwen2, mistral, baichuan, "
        "gpt2, gpt_neox",
        type, kind)};
  }
  if (!fields.status()) return fields.status().error();
  return config;
}

Expected<TransformerConfig> fromDimensions(const json& document, Fields& fields) {
  if (auto status = checkObject(
          document, "",
          {"name", "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads",
           "num_kv_heads", "vocab_size", "seq_length", "swiglu", "tied_embeddings"});
      !status) {
    return status.error();
  }
  TransformerConfig config;
  config.name = fields.stringOr("name", "transformer");
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
  if (!fields.status()) return fields.status().error();
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
  auto config =
      document.contains("model_type") ? fromHuggingFace(fields) : fromDimensions(document, fields);
  if (!config) return config;
  if (auto status = validateTransformerConfig(*config); !status) return status.error();
  return config;
}

}  // namespace autopar::frontend
