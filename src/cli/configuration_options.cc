#include "cli/configuration_options.h"

#include <fmt/format.h>

#include "cli/verbs.h"
#include "cost/constants.h"
#include "planner/inputs.h"

namespace autopar::cli {

void addConfigurationOptions(CLI::App& verb, planner::MegatronConfig& config,
                             ConfigurationFlags& flags) {
  verb.add_option("--model", config.model,
                  "preset, Hugging Face config.json, or dimensions JSON (num_layers, hidden_size, "
                  "ffn_hidden_size, num_attention_heads, num_kv_heads, vocab_size, seq_length, "
                  "swiglu)")
      ->required();
  verb.add_option("--cluster", config.cluster, "preset name or .yaml spec")->capture_default_str();
  verb.add_option("--nodes,--simulated-nnodes", config.nodes,
                  "nodes of a preset (estimate: default what TP x PP x DP needs; search: 1)")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb.add_option("--devices-per-node,--simulated-nproc-per-node", config.devicesPerNode,
                  "devices per node of a preset (default: the preset's)")
      ->check(positiveAtMost(limits::kMaxDevicesPerNode));
  verb.add_option("--gbs", config.gbs,
                  "global batch size (required for a transformer; for a graph, samples per step)")
      ->check(positiveAtMost(limits::kMaxGlobalBatch));
  verb.add_option("--seq", config.seq, "sequence length (default: the model's)")
      ->check(positiveAtMost(limits::kMaxSequence));
  verb.add_option("--precision", config.precision, "bf16 | fp16 | fp8")->capture_default_str();
  verb.add_option("--inter-node-gbps", config.interNodeGbps,
                  "inter-node bandwidth per device, Gbit/s (overrides the preset)")
      ->check(finiteIn(1e-3, 1e7));
  verb.add_option("--cost-model", flags.costModel,
                  "cost-model constants JSON (default: the compiled-in data/cost_model.json)");
  verb.add_option("--op-search", flags.opSearch,
                  "who shards each block on its TP x CP submesh: megatron (Megatron-LM's "
                  "annotation) | sharding_propagation | recursive_programming | ilp (the op-level "
                  "searches; their sharding is taken where the full model prices it faster)")
      ->capture_default_str();
  verb.add_option("--memory-margin", flags.memoryMarginGib,
                  "GiB of device memory to keep free: a configuration fits when every stage's "
                  "peak (its runtime reserve included) leaves this much")
      ->check(finiteIn(0, 1024));
  addMemoryPolicyOption(verb, config.memoryPolicy);
  verb.add_flag("--fp8-param-gather", config.fp8ParamGather,
                "under --precision fp8, keep the fp8 GEMMs' weights in fp8 (Megatron-Core's "
                "--fp8-param-gather, NeMo's fp8_params): no bf16 copy beside Transformer "
                "Engine's fp8 cache, and the parameter all-gather moves 1 byte an element");
  verb.add_option("--optimizer-state", flags.optimizerState,
                  "how Adam holds its state: fp32 (an fp32 master copy and moments, 12 bytes per "
                  "parameter: Megatron, PyTorch) | remainders (fp32 moments, the master as the "
                  "weight's missing 16 bits: NeMo's distributed_fused_adam, 10) | bf16 (bf16 "
                  "moments, no master: distributed_fused_adam with optim.dtype bf16, 4) | "
                  "fp32-moments (fp32 moments, no master: MindFormers' AdamW on float16 "
                  "weights, 8); default: the framework's, fp32-moments under mindspore, else "
                  "fp32");
  verb.add_option(
      "--framework", flags.framework,
      "the framework that runs the plan, whose code path is costed (docs/frameworks.md): " +
          cost::frameworkNames() + "; default: megatron-core, or mindspeed on an Ascend cluster");
  // Each switch of the code path, both ways, as cost/framework.h declares it.
  const auto switches = cost::codePathSwitches();
  for (size_t i = 0; i < switches.size(); ++i) {
    const std::string name(switches[i].flag);
    verb.add_flag(fmt::format("--{},!--no-{}", name, name), flags.codePathSwitches[i],
                  std::string(switches[i].doc))
        ->group("Code path");
  }
  verb.add_option("--attention", flags.attention,
                  "flash (FlashAttention-2, PyTorch's SDPA) | flash1 (FlashAttention's first "
                  "generation: flash-attn 1.x, the Triton kernel) | cudnn (Transformer Engine's) | "
                  "unfused (the score matrix in memory, Megatron-LM before 2023); "
                  "default: the framework's")
      ->group("Code path");
  verb.add_option("--loss", flags.loss,
                  "fp32 (the logits' fp32 copy kept as the softmax: PyTorch's "
                  "F.cross_entropy(logits.float()), Megatron's) | fused (one kernel over the "
                  "logits in their dtype: flash-attn's cross_entropy, llm-foundry's default) | "
                  "chunked (the head and the loss chunk by chunk, the logits never whole: "
                  "torchtitan's ChunkedLossWrapper, Liger's fused linear cross entropy); "
                  "default: the framework's")
      ->group("Code path");
}

void addMemoryPolicyOption(CLI::App& verb, ir::MemoryPolicy& policy) {
  verb.add_option_function<std::string>(
          "--memory-policy",
          [&policy](const std::string& value) {
            policy = value == "safe" ? ir::MemoryPolicy::kSafe : ir::MemoryPolicy::kExpected;
          },
          "expected (a plan fits when its estimated peak does) | safe (when the top of its memory "
          "band does: the estimate plus the error measured above it); the search, fit advice and "
          "--mem-coeff auto follow it")
      ->check(CLI::IsMember({"expected", "safe"}))
      ->default_str("expected");
}

Status applyConfigurationFlags(const ConfigurationFlags& flags, planner::MegatronConfig& config) {
  if (!flags.costModel.empty()) {
    auto costModel = cost::readCostModelFile(flags.costModel);
    if (!costModel) return costModel.error().in("--cost-model");
    config.costModel = std::move(*costModel);
  }
  auto opSearch = planner::parseOpSearch(flags.opSearch);
  if (!opSearch) return opSearch.error();
  config.opSearch = *opSearch;
  Expected<cost::FrameworkChoice> framework =
      cost::FrameworkChoice{cost::Framework::kMegatronCore, {}};
  if (!flags.framework.empty()) {
    framework = cost::parseFramework(flags.framework);
    if (!framework) return framework.error();
  } else if (auto cluster = planner::loadCluster(config.cluster, 1, 0, config.devicesPerNode)) {
    // A cluster that does not load is reported where the configuration is estimated.
    framework->framework = cost::defaultFramework(cluster->device);
  }
  config.framework = framework->framework;
  config.frameworkRelease = framework->release;
  config.memoryMarginBytes = static_cast<int64_t>(flags.memoryMarginGib * (1LL << 30));
  config.optimizerState = cost::defaultOptimizerState(config.framework);
  if (!flags.optimizerState.empty()) {
    auto optimizerState = cost::parseOptimizerState(flags.optimizerState);
    if (!optimizerState) return optimizerState.error().in("--optimizer-state");
    config.optimizerState = *optimizerState;
  }
  cost::CodePath& code = config.codePath;
  code = cost::releaseCodePath(config.framework, config.frameworkRelease);
  const auto switches = cost::codePathSwitches();
  for (size_t i = 0; i < switches.size(); ++i) {
    const int given = flags.codePathSwitches[i];
    if (given != 0) code.*switches[i].field = given > 0;
  }
  if (!flags.attention.empty()) {
    auto kernel = cost::parseAttentionKernel(flags.attention);
    if (!kernel) return kernel.error();
    code.attention = *kernel;
  }
  if (!flags.loss.empty()) {
    auto kernel = cost::parseLossKernel(flags.loss);
    if (!kernel) return kernel.error();
    code.loss = *kernel;
  }
  return {};
}

}  // namespace autopar::cli
