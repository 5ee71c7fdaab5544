#include "export/launch_script.h"

#include <fmt/format.h>

#include <cmath>

#include "export/comment_line.h"
#include "export/megatron_args.h"
#include "export/torchtitan_config.h"
#include "export/torchtitan_job.h"

namespace autopar::exporters {

namespace {

/// Whether Megatron-LM's --use-rope-scaling builds `scaling`: Llama 3.1's rescaling with the
/// frequency bands and original length Megatron-Core fixes (1, 4 and 8192; its rope_utils).
bool megatronBuildsLlama3Scaling(const frontend::TransformerConfig::RopeScaling& scaling) {
  return scaling.type == "llama3" && scaling.lowFrequencyFactor == 1 &&
         scaling.highFrequencyFactor == 4 && scaling.originalPositions == 8192;
}

/// Whether Megatron-LM's --rotary-seq-len-interpolation-factor (an integer) builds `scaling`.
bool megatronBuildsLinearScaling(const frontend::TransformerConfig::RopeScaling& scaling) {
  return scaling.type == "linear" &&
         scaling.factor == static_cast<double>(static_cast<int64_t>(scaling.factor));
}

std::string ropeScalingArguments(const frontend::TransformerConfig::RopeScaling& scaling) {
  if (megatronBuildsLlama3Scaling(scaling)) {
    return fmt::format(" --use-rope-scaling --rope-scaling-factor {}", scaling.factor);
  }
  if (megatronBuildsLinearScaling(scaling)) {
    return fmt::format(" --rotary-seq-len-interpolation-factor {}",
                       static_cast<int64_t>(scaling.factor));
  }
  return "";
}

/// Megatron-LM's model arguments for `model` (megatron/training/arguments.py).
std::string modelArguments(const frontend::TransformerConfig& model, int64_t seq) {
  using frontend::TransformerConfig;
  std::string args = fmt::format(
      "--num-layers {} --hidden-size {} --ffn-hidden-size {} --num-attention-heads {} "
      "--seq-length {} --max-position-embeddings {}",
      model.layers, model.hidden, model.ffn, model.heads, seq, seq);
  if (model.kvHeads != model.heads) {
    args += fmt::format(" --group-query-attention --num-query-groups {}", model.kvHeads);
  }
  if (model.mlp == TransformerConfig::Mlp::kSwiGLU) args += " --swiglu";
  if (model.norm == TransformerConfig::Norm::kRMSNorm) args += " --normalization RMSNorm";
  args += fmt::format(" --norm-epsilon {}", model.normEpsilon);
  if (model.position == TransformerConfig::Position::kRotary) {
    // Megatron-LM parses --rotary-base as an integer; megatronScript notes a rounded one.
    args += fmt::format(" --position-embedding-type rope --rotary-base {}{}",
                        std::llround(model.ropeBase), ropeScalingArguments(model.ropeScaling));
  }
  if (model.experts > 0) {
    args += fmt::format(" --num-experts {} --moe-router-topk {}", model.experts, model.topK);
  }
  if (!model.tiedEmbeddings) args += " --untie-embeddings-and-output-weights";
  if (!model.linearBias) args += " --disable-bias-linear";
  if (model.qkvBias && !model.linearBias) args += " --add-qkv-bias";
  args += fmt::format(" --hidden-dropout {} --attention-dropout 0", model.hiddenDropout);
  return args;
}

std::string precisionArguments(const std::string& precision) {
  if (precision == "fp16") return "--fp16";
  if (precision == "fp8") {
    return "--bf16 --transformer-impl transformer_engine --fp8-format hybrid "
           "--fp8-amax-history-len 1024 --fp8-amax-compute-algo max";
  }
  return "--bf16";
}

std::string torchrunLine(int64_t nodes, int64_t devicesPerNode) {
  return fmt::format(
      "torchrun --nnodes {} --nproc-per-node {} --node-rank \"$NODE_RANK\" --master-addr "
      "\"$MASTER_ADDR\" --master-port \"$MASTER_PORT\"",
      nodes, devicesPerNode);
}

std::string header(const ir::TrainingSetup& config, const plan::InputsRecord& inputs,
                   int64_t nodes) {
  return fmt::format(
      "#!/usr/bin/env bash\n"
      "# Written by autopar for {} on {} x {} (TP {} CP {} PP {} DP {}, micro-batch {}, global "
      "batch {}).\n"
      "# Run it on each of the {} nodes: NODE_RANK=0..{} MASTER_ADDR=<node 0's address> bash "
      "THIS_FILE\n"
      "set -euo pipefail\n"
      "NODE_RANK=${{NODE_RANK:-0}}\n"
      "MASTER_ADDR=${{MASTER_ADDR:-localhost}}\n"
      "MASTER_PORT=${{MASTER_PORT:-6000}}\n"
      "TRAIN_ITERS=${{TRAIN_ITERS:-20}}\n",
      commentLine(inputs.model), nodes, commentLine(inputs.cluster), config.tp, config.cp,
      config.pp, config.dp, config.mbs, config.gbs, nodes, nodes - 1);
}

/// A bash array of whitespace-separated arguments (the Megatron line keeps its own quotes).
/// Megatron-LM pads the vocabulary to a multiple of --make-vocab-size-divisible-by x TP (128 by
/// default: Llama 2's 32,000 rows at TP 8 become 32,768 of embedding and logits), while autopar
/// prices the model's own vocabulary, which the tensor-parallel degree divides. The largest power
/// of two up to that default that leaves it unpadded makes the run the one priced.
int64_t vocabDivisor(int64_t vocab, int64_t tp) {
  int64_t divisor = 128;
  while (divisor > 1 && vocab % (divisor * tp) != 0) divisor /= 2;
  return divisor;
}

std::string array(const std::string& name, const std::string& arguments) {
  return fmt::format("{}=({})\n", name, arguments);
}

std::string megatronScript(const ir::TrainingSetup& config, const plan::InputsRecord& inputs,
                           const frontend::TransformerConfig& model,
                           const std::vector<int64_t>& virtualStageLayers, int64_t nodes,
                           int64_t devicesPerNode) {
  const int64_t seq = config.seq > 0 ? config.seq : model.seq;
  std::string script = header(config, inputs, nodes);
  script +=
      ": \"${MEGATRON_LM:?set MEGATRON_LM to a Megatron-LM checkout (MindSpeed: with "
      "mindspeed installed)}\"\n"
      "# Megatron needs one CUDA stream per device for its communication to overlap in order.\n"
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
  for (const std::string& note : megatronNotes(config)) script += fmt::format("# Note: {}\n", note);
  if (model.position == frontend::TransformerConfig::Position::kRotary &&
      model.ropeBase != static_cast<double>(std::llround(model.ropeBase))) {
    script += fmt::format(
        "# Note: the rotary base {} is rounded to {}: Megatron-LM's --rotary-base is an integer\n",
        model.ropeBase, std::llround(model.ropeBase));
  }
  const frontend::TransformerConfig::RopeScaling& scaling = model.ropeScaling;
  if (!scaling.type.empty() && ropeScalingArguments(scaling).empty()) {
    script += fmt::format(
        "# Note: the model's rope_scaling '{}' (factor {}) has no Megatron-LM GPT argument; "
        "Megatron rotates the positions unscaled\n",
        scaling.type, scaling.factor);
  }
  script += array("MODEL_ARGS", modelArguments(model, seq));
  script += array("PARALLEL_ARGS", megatronArguments(config, virtualStageLayers));
  script += array("PRECISION_ARGS", precisionArguments(config.precision));
  // Mock data with the model's vocabulary, unpadded: the script measures the plan, not a dataset.
  script += array("DATA_ARGS", fmt::format("--mock-data --tokenizer-type NullTokenizer "
                                           "--vocab-size {} --make-vocab-size-divisible-by {} "
                                           "--split '100,0,0'",
                                           model.vocab - 1, vocabDivisor(model.vocab, config.tp)));
  script += array("TRAIN_ARGS",
                  "--train-iters \"$TRAIN_ITERS\" --lr 1.0e-4 --min-lr 1.0e-5 --lr-decay-style "
                  "cosine --weight-decay 0.1 --clip-grad 1.0 --log-interval 1 --eval-iters 0");
  std::string extra;
  if (config.framework == ir::Framework::kMegatronDeepSpeed) {
    script += fmt::format(
        "DS_CONFIG=$(mktemp)\n"
        "cat > \"$DS_CONFIG\" <<'JSON'\n"
        "{{\"train_batch_size\": {}, \"train_micro_batch_size_per_gpu\": {}, "
        "\"zero_optimization\": {{\"stage\": {}}}, \"{}\": {{\"enabled\": true}}}}\n"
        "JSON\n",
        config.gbs, config.mbs, deepSpeedZeroStage(config),
        config.precision == "fp16" ? "fp16" : "bf16");
    extra = " --deepspeed_config \"$DS_CONFIG\"";
  }
  script += fmt::format(
      "{} \"$MEGATRON_LM/pretrain_gpt.py\" \"${{MODEL_ARGS[@]}}\" \"${{PARALLEL_ARGS[@]}}\" "
      "\"${{PRECISION_ARGS[@]}}\" \"${{DATA_ARGS[@]}}\" \"${{TRAIN_ARGS[@]}}\"{}\n",
      torchrunLine(nodes, devicesPerNode), extra);
  return script;
}

/// A file the script writes before it runs the trainer: its name in the plan's directory, the
/// here-document's marker, and its text.
struct ScriptFile {
  std::string_view name;
  std::string_view marker;
  const std::string& text;
};

/// torchtitan's trainer on every node, with `files` written to a temporary directory on
/// PYTHONPATH and `trainerArgs` naming the plan.
std::string torchtitanLaunch(const ir::TrainingSetup& config, const plan::InputsRecord& inputs,
                             int64_t nodes, int64_t devicesPerNode, std::string_view intro,
                             std::initializer_list<ScriptFile> files,
                             std::string_view trainerArgs) {
  std::string script = header(config, inputs, nodes);
  script += fmt::format("# {}\nPLAN_DIR=$(mktemp -d)\n", intro);
  for (const ScriptFile& file : files) {
    script += fmt::format("cat > \"$PLAN_DIR/{}\" <<'{}'\n{}{}\n", file.name, file.marker,
                          file.text, file.marker);
  }
  script += "export PYTHONPATH=\"$PLAN_DIR${PYTHONPATH:+:$PYTHONPATH}\"\n";
  script += fmt::format("{} -m torchtitan.train {} --training.steps \"$TRAIN_ITERS\"\n",
                        torchrunLine(nodes, devicesPerNode), trainerArgs);
  return script;
}

/// torchtitan's trainer with the plan as a configuration module (--module/--config); under
/// torchtitan@2026-02, v0.2.2's with a TOML job (--job.config_file) and the module registering
/// the model's llama3 flavor.
Expected<std::string> torchtitanScript(const ir::TrainingSetup& config,
                                       const plan::InputsRecord& inputs,
                                       const frontend::TransformerConfig& model, int64_t nodes,
                                       int64_t devicesPerNode) {
  if (readsTorchtitanJob(config.frameworkRelease)) {
    auto job = torchtitanJob(config, model);
    if (!job) return job.error().in("--launch-script");
    return torchtitanLaunch(
        config, inputs, nodes, devicesPerNode,
        "torchtitan v0.2.2's trainer (pip install torchtitan==0.2.2, run from its checkout for "
        "its assets), with the plan as a TOML job config and the model as a llama3 flavor.",
        {{"autopar_flavor.py", "PYTHON", job->flavor}, {"autopar_plan.toml", "TOML", job->toml}},
        "--job.config_file \"$PLAN_DIR/autopar_plan.toml\"");
  }
  auto module = torchtitanConfig(config, model);
  if (!module) return module.error().in("--launch-script");
  return torchtitanLaunch(config, inputs, nodes, devicesPerNode,
                          "torchtitan's trainer (pip install torchtitan, run from its checkout "
                          "for its assets), with the plan as a configuration module "
                          "(--module/--config).",
                          {{"autopar_plan.py", "PYTHON", *module}},
                          "--module autopar_plan --config autopar_plan");
}

}  // namespace

Expected<std::string> launchScript(const ir::TrainingSetup& config,
                                   const plan::InputsRecord& inputs,
                                   const frontend::TransformerConfig& model,
                                   const std::vector<int64_t>& virtualStageLayers, int64_t nodes,
                                   int64_t devicesPerNode) {
  if (model.vision.layers > 0) {
    return Error{
        "--launch-script: a multimodal model starts from MindSpeed-MM's own scripts "
        "(examples/ in MindSpeed-MM); use the printed MindSpeed-MM settings"};
  }
  switch (config.framework) {
    case ir::Framework::kPytorchFsdp:
    case ir::Framework::kTorchtitan:
      return torchtitanScript(config, inputs, model, nodes, devicesPerNode);
    case ir::Framework::kComposer:
      return Error{
          "--launch-script: Composer starts from llm-foundry's run yaml (composer "
          "scripts/train/train.py YAML); use the printed Composer settings"};
    case ir::Framework::kMindSpore:
      return Error{
          "--launch-script: MindSpore's MindFormers starts from its run yaml (msrun ... "
          "run_mindformer.py --config FILE); use the printed MindFormers parallel_config"};
    default:
      if (model.position == frontend::TransformerConfig::Position::kAlibi) {
        return Error{fmt::format(
            "--launch-script: {} uses ALiBi positions, which Megatron-LM's GPT does not build "
            "(--position-embedding-type has no alibi)",
            inputs.model)};
      }
      return megatronScript(config, inputs, model, virtualStageLayers, nodes, devicesPerNode);
  }
}

}  // namespace autopar::exporters
