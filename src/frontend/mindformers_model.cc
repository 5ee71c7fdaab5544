#include "frontend/mindformers_model.h"

#include <fmt/format.h>

#include "frontend/model_presets.h"
#include "frontend/yaml_fields.h"

namespace autopar::frontend {

namespace {

constexpr const char* kModelSection = "model.model_config";

/// What `model.model_config` gives, each key optional.
struct ModelKeys {
  std::optional<std::string> preset;
  std::optional<int64_t> layers;
  std::optional<int64_t> hidden;
  std::optional<int64_t> heads;
  std::optional<int64_t> kvHeads;
  std::optional<int64_t> ffn;
  std::optional<int64_t> multipleOf;
  std::optional<double> ffnDimMultiplier;
  std::optional<int64_t> vocab;
  std::optional<int64_t> seq;
  std::optional<double> normEpsilon;
  std::optional<double> ropeBase;  ///< theta
  std::optional<std::string> computeDtype;

  [[nodiscard]] bool anyDimension() const {
    return layers || hidden || heads || kvHeads || ffn || multipleOf || vocab || seq;
  }
};

Status readIntKeys(const YAML::Node& root, ModelKeys& keys) {
  const std::pair<const char*, std::optional<int64_t>*> intKeys[] = {
      {"num_layers", &keys.layers},     {"hidden_size", &keys.hidden},
      {"num_heads", &keys.heads},       {"n_kv_heads", &keys.kvHeads},
      {"intermediate_size", &keys.ffn}, {"multiple_of", &keys.multipleOf},
      {"vocab_size", &keys.vocab},      {"seq_length", &keys.seq},
  };
  for (const auto& [key, out] : intKeys) {
    auto status = readYamlKey(root, {"model", "model_config", key}, readYamlPositiveInt, *out);
    if (!status) return status;
  }
  return {};
}

Expected<ModelKeys> readModelKeys(const YAML::Node& root) {
  ModelKeys keys;
  std::string path;
  auto section = findYamlNode(root, {"model", "model_config"}, path);
  if (!section) return section.error();
  if (isYamlUnset(*section)) return keys;
  if (!section->IsMap()) {
    return Error{fmt::format("{}: expected a mapping, got {}", path, describeYamlNode(*section))};
  }
  if (auto status = readIntKeys(root, keys); !status) return status.error();
  for (const auto& [key, out] :
       {std::pair{"model_preset", &keys.preset}, std::pair{"compute_dtype", &keys.computeDtype}}) {
    auto status = readYamlKey(root, {"model", "model_config", key}, readYamlString, *out);
    if (!status) return status.error();
  }
  for (const auto& [key, out] :
       {std::pair{"ffn_dim_multiplier", &keys.ffnDimMultiplier},
        std::pair{"rms_norm_eps", &keys.normEpsilon}, std::pair{"theta", &keys.ropeBase}}) {
    auto status = readYamlKey(root, {"model", "model_config", key}, readYamlPositiveNumber, *out);
    if (!status) return status.error();
  }
  return keys;
}

Expected<ir::DType> computeDtype(const std::string& name) {
  if (name == "float16") return ir::DType::kF16;
  if (name == "bfloat16") return ir::DType::kBF16;
  if (name == "float32") return ir::DType::kF32;
  return Error{
      fmt::format("{}.compute_dtype: expected \"float16\", \"bfloat16\" or \"float32\", got '{}'",
                  kModelSection, name)};
}

/// Without a preset every dimension must be given.
Status checkRequiredKeys(const ModelKeys& keys) {
  const std::pair<const char*, bool> required[] = {
      {"num_layers", keys.layers.has_value()},
      {"hidden_size", keys.hidden.has_value()},
      {"num_heads", keys.heads.has_value()},
      {"vocab_size", keys.vocab.has_value()},
      {"seq_length", keys.seq.has_value()},
      {"intermediate_size", keys.ffn.has_value() || keys.multipleOf.has_value()},
  };
  for (const auto& [key, given] : required) {
    if (given) continue;
    const char* alternative =
        std::string_view(key) == "intermediate_size" ? " (or multiple_of)" : "";
    return Error{
        fmt::format("{}.{}{}: missing; give it or name a model_preset to fill missing dimensions",
                    kModelSection, key, alternative)};
  }
  return {};
}

/// The starting point: the named preset, or an empty config named `defaultName`.
Expected<TransformerConfig> baseConfig(const ModelKeys& keys, const std::string& defaultName) {
  if (keys.preset) {
    auto preset = transformerPreset(*keys.preset);
    if (!preset) return preset.error().in(fmt::format("{}.model_preset", kModelSection));
    return *preset;
  }
  if (auto status = checkRequiredKeys(keys); !status) return status.error();
  TransformerConfig config;
  config.name = defaultName.empty() ? "mindformers" : defaultName;
  return config;
}

Status applyKeys(const ModelKeys& keys, TransformerConfig& config) {
  config.layers = keys.layers.value_or(config.layers);
  config.hidden = keys.hidden.value_or(config.hidden);
  config.heads = keys.heads.value_or(config.heads);
  // MindFormers' n_kv_heads: null means multi-head attention; a preset keeps its own value.
  config.kvHeads = keys.kvHeads.value_or(keys.preset ? config.kvHeads : config.heads);
  if (keys.ffn) {
    config.ffn = *keys.ffn;
  } else if (keys.multipleOf) {
    config.ffn = llamaFfnSize(config.hidden, *keys.multipleOf, keys.ffnDimMultiplier);
  }
  config.vocab = keys.vocab.value_or(config.vocab);
  config.seq = keys.seq.value_or(config.seq);
  config.normEpsilon = keys.normEpsilon.value_or(config.normEpsilon);
  config.ropeBase = keys.ropeBase.value_or(config.ropeBase);
  if (keys.computeDtype) {
    auto dtype = computeDtype(*keys.computeDtype);
    if (!dtype) return dtype.error();
    config.dtype = *dtype;
  }
  return {};
}

}  // namespace

int64_t llamaFfnSize(int64_t hidden, int64_t multipleOf, std::optional<double> ffnDimMultiplier) {
  int64_t width = 2 * (4 * hidden) / 3;
  if (ffnDimMultiplier)
    width = static_cast<int64_t>(*ffnDimMultiplier * static_cast<double>(width));
  return multipleOf * ((width + multipleOf - 1) / multipleOf);
}

MindFormersFamily mindformersFamily(const std::optional<std::string>& archType,
                                    std::string_view modelName) {
  if (archType) {
    if (*archType == "QwenForCausalLM") return MindFormersFamily::kQwen;
    if (archType->starts_with("Baichuan")) return MindFormersFamily::kBaichuan2;
    return MindFormersFamily::kLlama;
  }
  if (modelName.starts_with("qwen-")) return MindFormersFamily::kQwen;
  if (modelName.starts_with("baichuan2-")) return MindFormersFamily::kBaichuan2;
  return MindFormersFamily::kLlama;
}

void applyMindFormersVocabSplits(TransformerConfig& config, MindFormersFamily family,
                                 bool vocabEmbDp) {
  using Split = TransformerConfig::VocabSplit;
  config.embeddingTableWhole = vocabEmbDp;
  switch (family) {
    case MindFormersFamily::kLlama:
      config.headVocab = vocabEmbDp ? Split::kWhole : Split::kByTp;
      config.lossVocab = Split::kByTp;
      return;
    case MindFormersFamily::kQwen:
      config.headVocab = vocabEmbDp ? Split::kWhole : Split::kAllDevices;
      config.lossVocab = Split::kAllDevices;
      return;
    case MindFormersFamily::kBaichuan2:
      config.headVocab = Split::kAllDevices;
      config.lossVocab = Split::kAllDevices;
      return;
  }
}

Expected<std::optional<TransformerConfig>> readMindFormersModel(const YAML::Node& root,
                                                                const std::string& defaultName) {
  auto keys = readModelKeys(root);
  if (!keys) return keys.error();
  if (!keys->preset && !keys->anyDimension()) return std::optional<TransformerConfig>{};
  auto config = baseConfig(*keys, defaultName);
  if (!config) return config.error();
  if (auto status = applyKeys(*keys, *config); !status) return status.error();
  if (auto status = validateTransformerConfig(*config); !status) {
    return status.error().in(kModelSection);
  }
  return std::optional<TransformerConfig>(std::move(*config));
}

}  // namespace autopar::frontend
