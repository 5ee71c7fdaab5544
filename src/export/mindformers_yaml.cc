#include "export/mindformers_yaml.h"

#include <fmt/format.h>

#include <algorithm>

#include "frontend/model_presets.h"

namespace autopar::exporters {

std::string mindformersParallelConfig(const ir::TrainingSetup& config, int64_t microBatches) {
  // Without a pipeline MindFormers sets micro_batch_num to 1; the micro-batches of a step are
  // then its gradient accumulation steps (runner_config). vocab_emb_dp False: the configuration
  // splits the embedding table and the LM head's vocabulary by tensor parallelism, as
  // Megatron-LM does and as it was priced; MindFormers' default (True) keeps both whole on
  // every device, which for LLaMA2-70B on TP 4 made the last stage's head 4x the work.
  return fmt::format(
      "parallel_config:\n  data_parallel: {}\n  model_parallel: {}\n  context_parallel: {}\n"
      "  expert_parallel: {}\n  pipeline_stage: {}\n  micro_batch_num: {}\n  use_seq_parallel: {}\n"
      "  vocab_emb_dp: False\n  optimizer_shard: {}\nrecompute_config:\n  recompute: {}\n  "
      "select_recompute: {}\n"
      "runner_config:\n  batch_size: {}\n{}",
      config.dp, config.tp, config.cp, config.ep, config.pp, config.pp > 1 ? microBatches : 1,
      config.sequenceParallel ? "True" : "False", config.zero > 0 ? "True" : "False",
      config.recompute == ir::Recompute::kFull ? "True" : "False",
      config.recompute == ir::Recompute::kSelective ? "True" : "False", config.mbs,
      config.pp > 1 ? "" : fmt::format("  gradient_accumulation_steps: {}\n", microBatches));
}

namespace {

const char* yamlBool(bool value) { return value ? "True" : "False"; }

/// MindFormers' compute_dtype for autopar's precision (fp8 is not a MindFormers compute type:
/// its GEMMs run in bfloat16 there).
const char* computeDtype(const std::string& precision) {
  if (precision == "fp16") return "float16";
  if (precision == "fp32") return "float32";
  return "bfloat16";
}

}  // namespace

std::string mindformersRunYaml(const ir::TrainingSetup& config, const plan::InputsRecord& inputs,
                               const frontend::TransformerConfig& model, int64_t microBatches,
                               int64_t sequence) {
  const bool pipelined = config.pp > 1;
  std::string yaml = fmt::format(
      "# {} on {}: written by autopar (docs/mindformers-yaml.md).\n"
      "# Global batch (full_batch): batch_size x data_parallel x micro_batch_interleave_num x "
      "{} = {} x {} x 1 x {} = {}\n\n",
      inputs.model, inputs.cluster, pipelined ? "micro_batch_num" : "gradient_accumulation_steps",
      config.mbs, config.dp, microBatches, config.mbs * config.dp * microBatches);
  const bool interleaved = config.vpp > 1;
  yaml += fmt::format(
      "use_parallel: True\nparallel:\n  parallel_mode: 1\n  full_batch: True\n"
      "  enable_parallel_optimizer: {}\n",
      yamlBool(config.zero > 0));
  // ZeRO 2: the accumulated gradients sharded too, reduce-scattered every micro-batch.
  if (config.zero >= 2) {
    yaml += "  parallel_optimizer_config:\n    gradient_accumulation_shard: True\n";
  }
  if (interleaved) {
    yaml += "  pipeline_config:\n    pipeline_interleave: True\n    pipeline_scheduler: '1f1b'\n";
  }
  yaml += mindformersParallelConfig(config, microBatches);
  yaml += "micro_batch_interleave_num: 1\n\n";
  const std::vector<std::string>& presets = frontend::modelPresetNames();
  const bool preset = std::find(presets.begin(), presets.end(), inputs.model) != presets.end();
  yaml += "model:\n  model_config:\n    type: LlamaConfig\n";
  if (preset) yaml += fmt::format("    model_preset: {}  # autopar's key\n", inputs.model);
  yaml += fmt::format(
      "    num_layers: {}\n    hidden_size: {}\n    num_heads: {}\n    n_kv_heads: {}\n"
      "    intermediate_size: {}\n    vocab_size: {}\n    seq_length: {}\n"
      "    rms_norm_eps: {}\n    compute_dtype: \"{}\"\n",
      model.layers, model.hidden, model.heads, model.kvHeads, model.ffn, model.vocab, sequence,
      model.normEpsilon, computeDtype(config.precision));
  if (model.position == frontend::TransformerConfig::Position::kRotary) {
    yaml += fmt::format("    theta: {}\n", model.ropeBase);
  }
  if (interleaved) yaml += fmt::format("    pp_interleave_num: {}\n", config.vpp);
  return yaml;
}

}  // namespace autopar::exporters
