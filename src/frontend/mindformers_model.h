#pragma once
/// \file
/// The `model.model_config` section of a MindFormers run yaml as a TransformerConfig. Keys use
/// MindFormers' names (LlamaConfig):
///   model_preset       a preset of model_presets.h to start from (autopar's key)
///   num_layers, hidden_size, num_heads, n_kv_heads (null: num_heads), vocab_size, seq_length
///   intermediate_size  the MLP width; when absent it follows LLaMA's rule from multiple_of and
///                      ffn_dim_multiplier (llamaFfnSize), else the preset's
///   rms_norm_eps       the norm epsilon
///   compute_dtype      "float16", "bfloat16" or "float32"
/// Without a preset, num_layers, hidden_size, num_heads, vocab_size, seq_length and one of
/// intermediate_size / multiple_of are required.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "frontend/transformer.h"
#include "util/expected.h"

namespace autopar::frontend {

/// LLaMA's MLP width (MindFormers LlamaFeedForward, Meta's llama/model.py): 2/3 of 4*hidden,
/// times ffn_dim_multiplier when given, rounded up to a multiple of `multipleOf`.
///   llamaFfnSize(4096, 256, {})   = 11008  (LLaMA2-7B:  int(2*16384/3) = 10922 -> 43*256)
///   llamaFfnSize(8192, 4096, 1.3) = 28672  (LLaMA2-70B: int(1.3*21845) = 28398 -> 7*4096)
int64_t llamaFfnSize(int64_t hidden, int64_t multipleOf, std::optional<double> ffnDimMultiplier);

/// MindFormers' model families, as far as their semi-auto annotations of the embedding, the LM
/// head and the loss differ (MindFormers 1.2: mindformers/models/llama/llama.py,
/// research/qwen/qwen_model.py, research/baichuan2/baichuan2_7b.py and baichuan2_13b.py).
enum class MindFormersFamily { kLlama, kQwen, kBaichuan2 };

/// The family whose model code runs a run yaml's model: by `model.arch.type` (QwenForCausalLM;
/// Baichuan7BV2ForCausalLM, Baichuan13BV2ForCausalLM; any other class is LLaMA's code), or
/// without one by the model's name (the presets qwen-7b, qwen-14b, baichuan2-7b, baichuan2-13b).
MindFormersFamily mindformersFamily(const std::optional<std::string>& archType,
                                    std::string_view modelName);

/// Splits the vocabulary of `config`'s embedding, LM head and loss as the family's model code
/// shards them under parallel_config.vocab_emb_dp (`vocabEmbDp`):
///   embedding table    whole with vocab_emb_dp, else rows by mp (LlamaEmbedding)
///   LLaMA lm_head      ((dp,1),(1,1)) with vocab_emb_dp, else ((dp,1),(mp,1)); loss (dp, mp)
///   Qwen lm_head       ((dp,1),(1,1)) with vocab_emb_dp, else ((1,1),(dp*mp,1)); loss over
///                      dp*mp with data_parallel 1 (its loss_parallel_config)
///   Baichuan2 NormHead ((1,1),(dp*mp,1)) either way; loss as Qwen's
/// (MindSpore's MatMul strategies; the weight is [vocab, hidden], read transposed.)
void applyMindFormersVocabSplits(TransformerConfig& config, MindFormersFamily family,
                                 bool vocabEmbDp);

/// Reads `model.model_config` of `root`. Returns no model when the section names no preset and
/// gives no dimension. `defaultName` names a model without a preset (the yaml's file stem).
/// Errors carry the key path ("model.model_config.num_heads: expected a positive integer, got
/// 'x'") but no source name.
Expected<std::optional<TransformerConfig>> readMindFormersModel(const YAML::Node& root,
                                                                const std::string& defaultName);

}  // namespace autopar::frontend
