#include "frontend/mindformers_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/yaml_fields.h"
#include "util/closest_name.h"
#include "util/json_fields.h"
#include "util/limits.h"

namespace autopar::frontend {

using autopar::json::childPath;
using autopar::json::indexPath;

namespace {

struct Section {
  std::vector<std::string_view> path;  ///< the keys leading to it; none for the top level
  std::vector<std::string_view> keys;
};

// The union of the keys of 20 MindFormers training yamls (mindspore-lab/mindformers: configs/llama2
// pretrain, finetune and auto-parallel yamls; research/ qwen, qwen1.5, qwen2, baichuan2, llama3;
// configs/ glm2, pangualpha, gpt2) with the keys autopar reads (framework is autopar's own).
// model.model_config spans the model families' dimension names.
const std::vector<Section>& sections() {
  static const std::vector<Section> kSections = {
      {{},
       {"auto_trans_ckpt",
        "batch_size",
        "auto_tune",
        "autotune_per_step",
        "callbacks",
        "context",
        "do_eval",
        "eval_callbacks",
        "eval_dataset",
        "eval_dataset_task",
        "eval_epoch_interval",
        "eval_step_interval",
        "filepath_prefix",
        "framework",
        "init_start_profile",
        "layer_decay",
        "layer_scale",
        "load_checkpoint",
        "lr_scale",
        "lr_scale_factor",
        "lr_schedule",
        "metric",
        "micro_batch_interleave_num",
        "model",
        "moe_config",
        "only_save_strategy",
        "optimizer",
        "output_dir",
        "parallel",
        "parallel_config",
        "processor",
        "profile",
        "profile_communication",
        "profile_memory",
        "profile_start_step",
        "profile_stop_step",
        "recompute_config",
        "remote_save_url",
        "resume_training",
        "run_mode",
        "runner_config",
        "runner_wrapper",
        "seed",
        "src_strategy_path_or_dir",
        "train_dataset",
        "train_dataset_task",
        "trainer",
        "use_parallel"}},
      {{"parallel"},
       {"auto_pipeline", "enable_alltoall", "enable_parallel_optimizer", "full_batch",
        "gradients_mean", "loss_repeated_mean", "parallel_mode", "parallel_optimizer_config",
        "pipeline_config", "search_mode", "strategy_ckpt_config", "strategy_ckpt_save_file"}},
      {{"parallel", "pipeline_config"}, {"pipeline_interleave", "pipeline_scheduler"}},
      {{"parallel", "parallel_optimizer_config"},
       {"gradient_accumulation_shard", "parallel_optimizer_threshold"}},
      {{"parallel_config"},
       {"context_parallel", "data_parallel", "expert_parallel", "gradient_accumulation_steps",
        "gradient_aggregation_group", "mem_coeff", "micro_batch_interleave_num", "micro_batch_num",
        "model_parallel", "optimizer_shard", "pipeline_stage", "use_seq_parallel", "vocab_emb_dp"}},
      {{"recompute_config"},
       {"mp_comm_recompute", "parallel_optimizer_comm_recompute", "recompute",
        "recompute_slice_activation", "select_comm_recompute", "select_recompute"}},
      {{"runner_config"},
       {"batch_size", "epochs", "gradient_accumulation_steps", "sink_mode", "sink_size"}},
      {{"model"}, {"arch", "model_config"}},
      {{"model", "model_config"},
       {"add_bias_linear",
        "add_qkv_bias",
        "apply_query_key_layer_scaling",
        "apply_residual_connection_post_layernorm",
        "assistant_token_id",
        "attention_dropout",
        "attention_dropout_rate",
        "attention_softmax_in_fp32",
        "batch_size",
        "bias_dropout_fusion",
        "block_size",
        "bos_token_id",
        "checkpoint_name_or_path",
        "compute_dtype",
        "compute_in_2d",
        "do_sample",
        "emb_dropout_prob",
        "embedding_dropout_prob",
        "embedding_init_type",
        "eod_token_id",
        "eos_token_id",
        "expand_ratio",
        "expert_num",
        "extend_method",
        "ffn_dim_multiplier",
        "ffn_hidden_size",
        "fine_grain_interleave",
        "fp32_residual_connection",
        "hidden_act",
        "hidden_dropout",
        "hidden_dropout_rate",
        "hidden_size",
        "ignore_token_id",
        "initializer_range",
        "intermediate_size",
        "is_dynamic",
        "kv_channels",
        "layernorm_compute_type",
        "layernorm_epsilon",
        "max_decode_length",
        "max_new_tokens",
        "max_position_embedding",
        "max_position_embeddings",
        "model_preset",
        "multi_query_attention",
        "multi_query_group_num",
        "multiple_of",
        "n_kv_heads",
        "num_attention_heads",
        "num_blocks",
        "num_heads",
        "num_layers",
        "offset",
        "pad_token_id",
        "padded_vocab_size",
        "param_init_type",
        "per_token_num_experts_chosen",
        "post_layer_norm",
        "post_layernorm_residual",
        "pp_interleave_num",
        "pre_seq_len",
        "prefix_projection",
        "qkv_concat",
        "qkv_has_bias",
        "quantization_bit",
        "repetition_penalty",
        "rms_norm_eps",
        "rmsnorm",
        "rotary_dtype",
        "rotary_emb_base",
        "rotary_pct",
        "scaling_factor",
        "seq_length",
        "softmax_compute_type",
        "temperature",
        "theta",
        "top_k",
        "top_p",
        "type",
        "use_attn_mask_compression",
        "use_flash_attention",
        "use_moe",
        "use_past",
        "use_past_shard",
        "use_prompt_flash_attention",
        "user_token_id",
        "vocab_size"}},
  };
  return kSections;
}

/// The first key given twice in one mapping, anywhere in the document. yaml-cpp keeps both and
/// reads the first; PyYAML, which MindFormers reads the file with, keeps the last. The walk
/// follows aliases, so it counts the nodes it visits against `budget` (limits::kMaxYamlNodes).
Status checkDuplicateKeys(const YAML::Node& node, const std::string& path, size_t& budget) {
  if (budget-- == 0) {
    return Error{
        fmt::format("{}: the document expands to more than {} nodes through its aliases "
                    "(*name); expected a run yaml",
                    path.empty() ? "(root)" : path, limits::kMaxYamlNodes)};
  }
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      if (auto status = checkDuplicateKeys(node[i], indexPath(path, i), budget); !status) {
        return status;
      }
    }
  }
  if (!node.IsMap()) return {};
  std::vector<std::string> seen;
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    const std::string where = childPath(path, key);
    if (!key.empty() && std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return Error{fmt::format(
          "{}: given twice (MindFormers would take the last, autopar the first); give it once",
          where)};
    }
    seen.push_back(key);
    if (auto status = checkDuplicateKeys(entry.second, where, budget); !status) return status;
  }
  return {};
}

}  // namespace

Status checkKnownKeys(const YAML::Node& root) {
  size_t budget = limits::kMaxYamlNodes;
  if (auto status = checkDuplicateKeys(root, "", budget); !status) return status;
  for (const Section& section : sections()) {
    // A section that is not a mapping is its reader's error to report, with its own words.
    std::string path;
    auto node = findYamlNode(root, section.path, path);
    if (!node || !node->IsMap()) continue;
    for (const auto& entry : *node) {
      if (!entry.first.IsScalar()) continue;
      const std::string key = entry.first.Scalar();
      if (std::find(section.keys.begin(), section.keys.end(), key) != section.keys.end()) continue;
      return Error{fmt::format("{}: unknown key; did you mean {}? (docs/mindformers-yaml.md)",
                               childPath(path, key), closestName(key, section.keys))};
    }
  }
  return {};
}

}  // namespace autopar::frontend
