#include "export/torchtitan_job.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "cost/framework.h"
#include "export/comment_line.h"
#include "export/torchtitan_config.h"

namespace autopar::exporters {

namespace {

using frontend::TransformerConfig;

/// One TOML table: its name and its `key = value` lines.
struct Table {
  std::string name;
  std::vector<std::string> lines;
};

std::string render(const std::vector<Table>& tables) {
  std::string text;
  for (const Table& table : tables) {
    text += fmt::format("\n[{}]\n", table.name);
    for (const std::string& line : table.lines) text += line + "\n";
  }
  return text;
}

std::string tomlBool(bool value) { return value ? "true" : "false"; }

/// v0.2.2 cuts the model in ceil((layers + 2) / layers_per_stage) virtual stages (the embedding
/// and the output count as a layer each); without the key, 2 a rank. The value that makes the
/// plan's stages, if any (0: none, or not needed).
int64_t layersPerStage(const ir::TrainingSetup& config, int64_t layers) {
  if (config.pp <= 1 || config.vpp <= 2) return 0;
  const int64_t stages = config.pp * config.vpp;
  for (int64_t perStage = 1; perStage <= layers + 2; ++perStage) {
    if ((layers + 2 + perStage - 1) / perStage == stages) return perStage;
  }
  return 0;
}

/// The [parallelism] table (torchtitanRun's data parallelism). `layers`: the model's, for the
/// interleaved stages' layers (0: leave the key out).
Table parallelism(const ir::TrainingSetup& config, int64_t layers) {
  const TorchtitanRun run = torchtitanRun(config);
  Table table{"parallelism",
              {fmt::format("data_parallel_replicate_degree = {}", run.replicateDegree),
               fmt::format("data_parallel_shard_degree = {}", run.shardDegree)}};
  if (run.reshardNever) table.lines.emplace_back("fsdp_reshard_after_forward = \"never\"");
  table.lines.push_back(fmt::format("tensor_parallel_degree = {}", config.tp));
  if (run.asyncTp) table.lines.emplace_back("enable_async_tensor_parallel = true");
  table.lines.push_back(fmt::format("pipeline_parallel_degree = {}", config.pp));
  if (config.pp > 1) {
    table.lines.push_back(fmt::format("pipeline_parallel_schedule = \"{}\"",
                                      config.vpp > 1 ? "Interleaved1F1B" : "1F1B"));
    table.lines.push_back(fmt::format("pipeline_parallel_microbatch_size = {}", config.mbs));
    if (const int64_t perStage = layersPerStage(config, layers); perStage > 0) {
      table.lines.push_back(fmt::format("pipeline_parallel_layers_per_stage = {}", perStage));
    }
  }
  table.lines.push_back(fmt::format("context_parallel_degree = {}", config.cp));
  return table;
}

/// The trainer takes global_batch_size / (local_batch_size x replicas) accumulation steps; under
/// a pipeline the replica's whole batch is one step, cut in pipeline_parallel_microbatch_size.
Table training(const ir::TrainingSetup& config, int64_t seq) {
  const int64_t local = config.pp > 1 ? config.mbs * config.microBatches() : config.mbs;
  return {"training",
          {fmt::format("local_batch_size = {}", local),
           fmt::format("global_batch_size = {}", config.gbs), fmt::format("seq_len = {}", seq),
           "max_norm = 1.0", "steps = 1000", "dataset = \"c4\""}};
}

Table activationCheckpoint(ir::Recompute recompute) {
  switch (recompute) {
    case ir::Recompute::kFull:
      return {"activation_checkpoint", {"mode = \"full\""}};
    case ir::Recompute::kSelective:
      return {"activation_checkpoint", {"mode = \"selective\"", "selective_ac_option = \"op\""}};
    case ir::Recompute::kNone:
      break;
  }
  return {"activation_checkpoint", {"mode = \"none\""}};
}

/// multiple_of and ffn_dim_multiplier that make v0.2.2's FeedForward `ffn` wide: it takes
/// int(2 x 4 dim / 3), scales it by ffn_dim_multiplier when set, and rounds up to multiple_of.
std::string mlpWidth(const TransformerConfig& model) {
  const int64_t base = 8 * model.hidden / 3;
  if (base <= model.ffn)
    return fmt::format("multiple_of={},\n    ffn_dim_multiplier=None", model.ffn);
  // Rounded down, so that the scaled width is at most ffn and rounds up to it.
  const double multiplier =
      std::floor(static_cast<double>(model.ffn) * 1e9 / static_cast<double>(base)) / 1e9;
  return fmt::format("multiple_of={},\n    ffn_dim_multiplier={}", model.ffn, multiplier);
}

/// v0.2.2 always rescales RoPE as Llama 3.1 does; a factor of 1 leaves both bands as they are.
std::string ropeScaling(const TransformerConfig& model) {
  if (model.ropeScaling.type != "llama3") return "RoPEScalingArgs(scaling_factor=1.0)";
  const TransformerConfig::RopeScaling& s = model.ropeScaling;
  return fmt::format(
      "RoPEScalingArgs(\n        scaling_factor={}, low_freq_factor={}, high_freq_factor={}, "
      "original_max_position_embeddings={}\n    )",
      s.factor, s.lowFrequencyFactor, s.highFrequencyFactor, s.originalPositions);
}

std::string flavorModule(const TransformerConfig& model) {
  return fmt::format(
      "# Registers {name} as torchtitan v0.2.2's llama3 flavor \"autopar\" (imported by the job's\n"
      "# [experimental] custom_import before the trainer looks the flavor up), written by "
      "autopar.\n"
      "from torchtitan.models.llama3 import llama3_args\n"
      "from torchtitan.models.llama3.model.args import RoPEScalingArgs, TransformerModelArgs\n\n"
      "llama3_args[\"autopar\"] = TransformerModelArgs(\n"
      "    dim={hidden},\n"
      "    n_layers={layers},\n"
      "    n_heads={heads},\n"
      "    n_kv_heads={kvHeads},\n"
      "    vocab_size={vocab},\n"
      "    {mlp},\n"
      "    norm_eps={eps},\n"
      "    rope_theta={theta},\n"
      "    rope_scaling_args={scaling},\n"
      ")\n",
      fmt::arg("name", commentLine(model.name)), fmt::arg("hidden", model.hidden),
      fmt::arg("layers", model.layers), fmt::arg("heads", model.heads),
      fmt::arg("kvHeads", model.kvHeads), fmt::arg("vocab", model.vocab),
      fmt::arg("mlp", mlpWidth(model)), fmt::arg("eps", model.normEpsilon),
      fmt::arg("theta", model.ropeBase), fmt::arg("scaling", ropeScaling(model)));
}

/// What the job cannot say, as comments.
std::string notes(const ir::TrainingSetup& config, const TransformerConfig& model) {
  std::string text;
  if (config.frameworkRelease != kTorchtitanTomlRelease) {
    text += fmt::format(
        "# Note: priced as torchtitan@{}; written as torchtitan v0.2.2 reads its job config.\n",
        config.frameworkRelease);
  }
  if (!config.codePath.fusedNorm) {
    text +=
        "# Note: the plan priced RMSNorm as eager ops; v0.2.2's nn.RMSNorm runs fused kernels "
        "from torch 2.9.\n";
  }
  if (config.codePath.loss != ir::LossKernel::kFp32) {
    text += fmt::format(
        "# Note: torchtitan v0.2.2's loss is cross entropy over the whole logits "
        "(build_cross_entropy_loss); the plan priced the {} loss.\n",
        cost::lossKernelName(config.codePath.loss));
  }
  text += torchtitanReduceNote(config);
  if (config.precision == "fp8" && config.fp8ParamGather && config.zero < 2) {
    text += "# Note: float8 all-gathers need FSDP; the plan gathered float8 parameters.\n";
  }
  if (config.pp > 1 && config.vpp > 2 && layersPerStage(config, model.layers) == 0) {
    text += fmt::format(
        "# Note: no pipeline_parallel_layers_per_stage makes {} virtual stages of {} layers; "
        "the plan has {} model chunks per stage.\n",
        config.pp * config.vpp, model.layers, config.vpp);
  }
  return text + torchtitanTokenizerNote(model, "model.hf_assets_path");
}

}  // namespace

Expected<TorchtitanJob> torchtitanJob(const ir::TrainingSetup& config,
                                      const TransformerConfig& model) {
  std::string unlike = unlikeTorchtitanLlama(model);
  if (unlike.empty() && model.tiedEmbeddings) {
    unlike = "tied embeddings (v0.2.2's llama3 has its own output layer)";
  }
  if (!unlike.empty()) {
    return Error{fmt::format(
        "torchtitan@{}: {} has {}, which torchtitan v0.2.2's llama3 model does not; use "
        "--framework megatron-core for its launch script",
        kTorchtitanTomlRelease, model.name, unlike)};
  }
  const int64_t seq = config.seq > 0 ? config.seq : model.seq;
  const bool fp8 = config.precision == "fp8";
  std::vector<Table> tables{
      {"job", {"dump_folder = \"./outputs\"", "description = \"autopar plan\""}},
      {"model",
       {"name = \"llama3\"", "flavor = \"autopar\"",
        "hf_assets_path = \"./assets/hf/Llama-3.1-8B\""}},
      {"optimizer", {"name = \"AdamW\"", "lr = 3e-4", "eps = 1e-8"}},
      {"lr_scheduler", {"warmup_steps = 200"}},
      training(config, seq),
      parallelism(config, model.layers),
      {"compile",
       {fmt::format("enable = {}", tomlBool(torchtitanRun(config).compile)),
        "components = [\"model\", \"loss\"]"}},
      activationCheckpoint(config.recompute),
      {"experimental", {"custom_import = \"autopar_flavor\""}}};
  if (fp8) {
    tables[1].lines.emplace_back("converters = [\"quantize.linear.float8\"]");
    const bool gathered = config.fp8ParamGather && config.zero >= 2;
    tables.push_back(
        {"quantize.linear.float8",
         {fmt::format("enable_fsdp_float8_all_gather = {}", tomlBool(gathered)),
          fmt::format("precompute_float8_dynamic_scale_for_fsdp = {}", tomlBool(gathered)),
          "filter_fqns = [\"output\"]"}});
  }
  TorchtitanJob job;
  job.toml = fmt::format(
      "# torchtitan v0.2.2 job configuration of {} (torchtitan@{}), written by autopar.\n"
      "# Run: torchrun ... -m torchtitan.train --job.config_file autopar_plan.toml, with "
      "autopar_flavor.py on PYTHONPATH\n",
      commentLine(model.name), kTorchtitanTomlRelease);
  job.toml += notes(config, model) + render(tables);
  job.flavor = flavorModule(model);
  return job;
}

std::string torchtitanJobSummary(const ir::TrainingSetup& config, int64_t seq) {
  return render({parallelism(config, 0), training(config, seq),
                 activationCheckpoint(config.recompute)})
      .substr(1);
}

}  // namespace autopar::exporters
