#pragma once
/// \file
/// Transformer configurations from JSON files: a Hugging Face `config.json` or an object of
/// dimensions (what `autopar estimate --model dims.json` and the runtime's test models take).
///
/// Hugging Face `config.json`, by `model_type`:
///   llama, qwen2, mistral  num_hidden_layers, hidden_size, intermediate_size,
///                          num_attention_heads, num_key_value_heads (default: heads),
///                          vocab_size, max_position_embeddings, tie_word_embeddings, rms_norm_eps;
///                          SwiGLU, RMSNorm, rotary positions; qwen2 adds q/k/v biases.
///   mixtral                as llama, every MLP a mixture of num_local_experts experts of width
///                          intermediate_size, num_experts_per_tok of them per token;
///                          sliding_window is ignored (attention costed over the whole sequence)
///   baichuan               as llama, sequence from model_max_length; 40-layer models (Baichuan
///                          2 13B) use ALiBi positions, the others rotary.
///   gpt2                   n_layer, n_embd, n_head, n_inner (default 4 x n_embd), vocab_size,
///                          n_positions, layer_norm_epsilon; GeLU, LayerNorm, learned positions,
///                          biases on every projection, tied embeddings.
///   gpt_neox               num_hidden_layers, hidden_size, intermediate_size,
///                          num_attention_heads, vocab_size, max_position_embeddings,
///                          layer_norm_eps, tie_word_embeddings; GeLU, LayerNorm, rotary, biases.
///   qwen2_vl               as qwen2, with the vision tower of vision_config.
/// Every rotary kind also reads rope_theta (gpt_neox: rotary_emb_base; default 10,000) and
/// rope_scaling (null, or its rope_type or type, factor, and for llama3 low_freq_factor,
/// high_freq_factor and original_max_position_embeddings), which the exports write.
/// Other keys are ignored (config.json files carry many).
///
/// Dimensions object (every key required unless marked):
///   {"num_layers": 2, "hidden_size": 256, "ffn_hidden_size": 688, "num_attention_heads": 8,
///    "num_kv_heads": 8 (optional: heads), "vocab_size": 32000, "seq_length": 512,
///    "swiglu": true, "tied_embeddings": false (optional), "hidden_dropout": 0.1 (optional: 0,
///    Megatron-LM's --hidden-dropout after attention and MLP), "name": "tiny" (optional),
///    "num_experts": 8, "moe_top_k": 2 (optional, both or neither: a mixture of experts)}
/// swiglu true builds LLaMA-style layers (SwiGLU, RMSNorm, rotary); false builds GPT-style layers
/// (GeLU, LayerNorm, learned positions, biases), as Megatron-LM's --swiglu switches.

#include <nlohmann/json.hpp>
#include <string>

#include "frontend/transformer.h"
#include "util/expected.h"

namespace autopar::frontend {

/// Whether a parsed JSON document is a model configuration (it has "model_type" or
/// "num_layers") rather than a graph.
bool isModelConfig(const nlohmann::json& document);

/// The transformer a configuration document describes; errors name the field:
///   "num_attention_heads: expected a positive integer, got 0"
///   "top level: missing required field 'swiglu'"
///   "model_type: 'bert' is not supported yet; supported: llama, qwen2, qwen2_vl, mistral,
///    mixtral, baichuan, gpt2, gpt_neox"
Expected<TransformerConfig> modelConfigFromJson(const nlohmann::json& document);

}  // namespace autopar::frontend
