#include "export/torchtitan_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "export/comment_line.h"

namespace autopar::exporters {

namespace {

using frontend::TransformerConfig;

}  // namespace

std::string unlikeTorchtitanLlama(const TransformerConfig& model) {
  if (model.vision.layers > 0) return "a vision tower";
  if (model.experts > 0) return "experts (torchtitan's MoE models are deepseek_v3 and qwen3)";
  if (model.mlp != TransformerConfig::Mlp::kSwiGLU) return "a GeLU MLP (its MLP is SwiGLU)";
  if (model.norm != TransformerConfig::Norm::kRMSNorm) return "LayerNorm (its norm is RMSNorm)";
  if (model.position != TransformerConfig::Position::kRotary) {
    return "learned or ALiBi positions (it rotates)";
  }
  if (model.qkvBias || model.linearBias) return "biases on its projections";
  const std::string& scaling = model.ropeScaling.type;
  if (!scaling.empty() && scaling != "llama3") {
    return fmt::format("rope_scaling '{}' (its RoPE scales as Llama 3 does)", scaling);
  }
  return "";
}

namespace {

/// The model, registered as llama3 flavor "autopar": built as torchtitan builds its own flavors
/// (torchtitan/models/llama3/__init__.py), whose layer builder and initialisers it reuses.
std::string modelFunction(const TransformerConfig& model, int64_t seq) {
  std::string rope = fmt::format("dim={} // {}, max_context_length={}, theta={}", model.hidden,
                                 model.heads, seq, model.ropeBase);
  if (model.ropeScaling.type == "llama3") {
    const TransformerConfig::RopeScaling& s = model.ropeScaling;
    rope += fmt::format(
        ", scaling=\"llama\", scaling_factor={}, low_freq_factor={}, high_freq_factor={}, "
        "original_max_position_embeddings={}",
        s.factor, s.lowFrequencyFactor, s.highFrequencyFactor, s.originalPositions);
  }
  return fmt::format(
      "def autopar_model(attn_backend: str, tp_gemm_backend=\"default\") -> "
      "llama3.Llama3Model.Config:\n"
      "    dim, vocab = {hidden}, {vocab}\n"
      "    return llama3.Llama3Model.Config(\n"
      "        dim=dim,\n"
      "        vocab_size=vocab,\n"
      "        enable_weight_tying={tied},\n"
      "        tok_embeddings=Embedding.Config(\n"
      "            num_embeddings=vocab, embedding_dim=dim, param_init=llama3._EMBEDDING_INIT\n"
      "        ),\n"
      "        norm=RMSNorm.Config(normalized_shape=dim, eps={eps}, "
      "param_init=llama3._NORM_INIT),\n"
      "        lm_head=Linear.Config(\n"
      "            in_features=dim, out_features=vocab, "
      "param_init=llama3._output_linear_init(dim)\n"
      "        ),\n"
      "        layers=llama3._build_llama3_layers(\n"
      "            fuse_qkv=True,\n"
      "            n_layers={layers},\n"
      "            dim=dim,\n"
      "            n_heads={heads},\n"
      "            n_kv_heads={kvHeads},\n"
      "            hidden_dim={ffn},\n"
      "            rope=ComplexRoPE.Config({rope}),\n"
      "            attn_backend=attn_backend,\n"
      "            tp_gemm_backend=tp_gemm_backend,\n"
      "        ),\n"
      "    )\n\n\n"
      "llama3.llama3_configs[\"autopar\"] = autopar_model\n",
      fmt::arg("hidden", model.hidden), fmt::arg("vocab", model.vocab),
      fmt::arg("tied", model.tiedEmbeddings ? "True" : "False"), fmt::arg("eps", model.normEpsilon),
      fmt::arg("layers", model.layers), fmt::arg("heads", model.heads),
      fmt::arg("kvHeads", model.kvHeads), fmt::arg("ffn", model.ffn), fmt::arg("rope", rope));
}

/// ParallelismConfig's arguments (torchtitanRun's data parallelism).
std::vector<std::string> parallelismArguments(const ir::TrainingSetup& config) {
  const TorchtitanRun run = torchtitanRun(config);
  std::vector<std::string> args{
      fmt::format("data_parallel_replicate_degree={}", run.replicateDegree),
      fmt::format("data_parallel_shard_degree={}", run.shardDegree)};
  if (run.reshardNever) args.emplace_back("fsdp_reshard_after_forward=\"never\"");
  args.push_back(fmt::format("tensor_parallel_degree={}", config.tp));
  args.push_back(fmt::format("pipeline_parallel_degree={}", config.pp));
  if (config.pp > 1) {
    args.push_back(fmt::format("pipeline_parallel_schedule=\"{}\"",
                               config.vpp > 1 ? "Interleaved1F1B" : "1F1B"));
    args.push_back(fmt::format("num_pp_microbatches={}", config.microBatches()));
  }
  args.push_back(fmt::format("context_parallel_degree={}", config.cp));
  return args;
}

std::vector<std::string> trainingArguments(const ir::TrainingSetup& config, int64_t seq) {
  return {fmt::format("num_tokens_per_microbatch_per_dp_rank={}", config.mbs * seq),
          fmt::format("num_tokens_per_train_step={}", config.gbs * seq),
          fmt::format("max_context_length={}", seq)};
}

/// One argument a line, as the module's calls are written.
std::string argumentBlock(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& arg : args) text += fmt::format("        {},\n", arg);
  return text;
}

std::string activationCheckpoint(ir::Recompute recompute) {
  switch (recompute) {
    case ir::Recompute::kFull:
      return "FullAC.Config()";
    case ir::Recompute::kSelective:
      return "SelectiveAC.Config()";
    case ir::Recompute::kNone:
      break;
  }
  return "None";
}

/// What the configuration cannot say, as comments.
std::string notes(const ir::TrainingSetup& config, const TransformerConfig& model) {
  std::string text;
  if (!config.frameworkRelease.empty()) {
    text += fmt::format(
        "# Note: priced as torchtitan@{}; written as torchtitan b5bcd76 takes its configuration, "
        "with that release's loss.\n",
        config.frameworkRelease);
  }
  if (config.codePath.loss == ir::LossKernel::kFused) {
    text += "# Note: torchtitan has no fused cross entropy; the plan priced one.\n";
  }
  text += torchtitanReduceNote(config);
  if (config.precision == "fp8" && config.fp8ParamGather) {
    text +=
        "# Note: torchtitan's rowwise float8 gathers bf16 parameters; the plan gathered them in "
        "float8.\n";
  }
  if (config.pp > 1 && config.vpp > 2) {
    text += fmt::format(
        "# Note: Interleaved1F1B's model chunks per stage follow "
        "parallelism.pipeline_parallel_layers_per_stage; the plan has {} per stage.\n",
        config.vpp);
  }
  if (model.normEpsilon != 1e-5) {
    text += fmt::format(
        "# Note: the layers' RMSNorms keep torchtitan's epsilon 1e-05; the model's is {}.\n",
        model.normEpsilon);
  }
  return text + torchtitanTokenizerNote(model, "config.hf_assets_path");
}

}  // namespace

TorchtitanRun torchtitanRun(const ir::TrainingSetup& config) {
  const bool sharded = config.zero >= 2;
  const bool asyncTp = config.tp > 1 && config.codePath.tpCommOverlap;
  return {.replicateDegree = sharded ? 1 : config.dp,
          .shardDegree = sharded ? config.dp : 1,
          .reshardNever = config.zero == 2,
          .asyncTp = asyncTp,
          .compile = config.codePath.fusedElementwise || asyncTp};
}

std::string torchtitanReduceNote(const ir::TrainingSetup& config) {
  if (!config.codePath.gradReduceInBf16) return "";
  return "# Note: torchtitan reduces gradients in float32 only (training.mixed_precision_reduce); "
         "the plan reduced them in bf16.\n";
}

std::string torchtitanTokenizerNote(const TransformerConfig& model, std::string_view assetsKey) {
  if (model.vocab == 128256) return "";
  return fmt::format(
      "# The recipe's data and tokenizer are Llama 3.1 8B's (vocabulary 128256); for this "
      "vocabulary of {} set {} to the model's tokenizer.\n",
      model.vocab, assetsKey);
}

Expected<std::string> torchtitanConfig(const ir::TrainingSetup& config,
                                       const TransformerConfig& model) {
  if (const std::string unlike = unlikeTorchtitanLlama(model); !unlike.empty()) {
    return Error{fmt::format(
        "torchtitan: {} has {}, which torchtitan's llama3 model does not; use --framework "
        "megatron-core for its launch script",
        model.name, unlike)};
  }
  const int64_t seq = config.seq > 0 ? config.seq : model.seq;
  const bool fp8 = config.precision == "fp8";
  const TorchtitanRun run = torchtitanRun(config);
  std::string text = fmt::format(
      "# torchtitan configuration of {} (torchtitan b5bcd76's Trainer.Config), written by "
      "autopar.\n"
      "# Run: torchrun ... -m torchtitan.train --module autopar_plan --config autopar_plan\n",
      commentLine(model.name));
  text += notes(config, model);
  text +=
      "from torchtitan.components.loss import ChunkedLossWrapper, CrossEntropyLoss\n"
      "from torchtitan.config import CompileConfig, ParallelismConfig, TrainingConfig\n"
      "from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC\n"
      "from torchtitan.models import llama3\n"
      "from torchtitan.models.common import ComplexRoPE, Embedding, Linear, RMSNorm\n"
      "from torchtitan.models.common.config_utils import decoder_vocab_size\n"
      "from torchtitan.models.llama3.config_registry import llama3_8b\n"
      "from torchtitan.trainer import Trainer\n";
  if (fp8) text += "from torchtitan.components.quantization import Float8LinearConverter\n";
  text += "\n\n" + modelFunction(model, seq) + "\n\n";
  text += fmt::format(
      "def autopar_plan() -> Trainer.Config:\n"
      "    config = llama3_8b()  # its data, tokenizer, optimizer and schedule\n"
      "    config.compile = CompileConfig(enable={}{})\n",
      run.compile ? "True" : "False", run.asyncTp ? ", enable_async_tensor_parallel=True" : "");
  if (fp8) {
    text +=
        "    converters = [\n"
        "        Float8LinearConverter.Config(\n"
        "            filter_fqns=[\"lm_head\"], model_compile_enabled=config.compile.enable\n"
        "        )\n"
        "    ]\n"
        "    config.model_spec = llama3.model_registry(\"autopar\", converters=converters)\n";
  } else {
    text += "    config.model_spec = llama3.model_registry(\"autopar\")\n";
  }
  // torchtitan's recipes chunk the loss (ChunkedLossWrapper, 8 chunks); the release before
  // (torchtitan@2026-05) and a --loss other than chunked run CrossEntropyLoss over the whole
  // logits, which is torchtitan's only loss kernel.
  const std::string crossEntropy =
      "CrossEntropyLoss.Config(global_vocab_size=decoder_vocab_size(config.model_spec))";
  text +=
      config.codePath.loss == ir::LossKernel::kChunked
          ? fmt::format("    config.loss = ChunkedLossWrapper.Config(loss_fn={})\n", crossEntropy)
          : fmt::format("    config.loss = {}\n", crossEntropy);
  text += fmt::format(
      "    config.parallelism = ParallelismConfig(\n{}    )\n"
      "    config.training = TrainingConfig(\n{}    )\n"
      "    config.activation_checkpoint = {}\n"
      "    return config\n",
      argumentBlock(parallelismArguments(config)), argumentBlock(trainingArguments(config, seq)),
      activationCheckpoint(config.recompute));
  return text;
}

std::string torchtitanSummary(const ir::TrainingSetup& config, int64_t seq) {
  return fmt::format("ParallelismConfig({})\nTrainingConfig({})\nactivation_checkpoint = {}\n",
                     fmt::join(parallelismArguments(config), ", "),
                     fmt::join(trainingArguments(config, seq), ", "),
                     activationCheckpoint(config.recompute));
}

}  // namespace autopar::exporters
