#include "cli/configuration_options.h"

#include <fmt/format.h>

#include "cli/verbs.h"
#include "planner/inputs.h"

namespace autopar::cli {

void printEstimateReport(const planner::MegatronConfig& config,
                         const planner::ConfigEstimate& estimate) {
  const auto& step = estimate.evaluated.estimate;
  fmt::print("autopar estimate: {} on {} ({} x {})\n", config.model, estimate.cluster.name,
             estimate.worldSize, estimate.cluster.device.name);
  const std::string expert = config.ep > 1 ? fmt::format(" EP {}", config.ep) : "";
  fmt::print(
      "  TP {} PP {} DP {}{} VPP {}  micro-batch {} x {} per step, global batch {}, sequence "
      "{}{}{}\n",
      config.tp, config.pp, config.dp, expert, config.vpp, config.mbs, estimate.microBatches,
      config.gbs, estimate.sequence, config.sequenceParallel ? ", sequence parallel" : "",
      config.zeroBubble ? ", zero-bubble H1" : "");
  const std::string recompute = config.recomputeBlocks.empty()
                                    ? config.recompute
                                    : fmt::format("{}, full on {} placed layers", config.recompute,
                                                  config.recomputeBlocks.size());
  fmt::print("  recompute {}, ZeRO {}, {}\n\n", recompute, config.zero, config.precision);
  if (estimate.opSearchStepSeconds > 0) {
    const std::string searched =
        fmt::format("--op-search {}", planner::opSearchName(config.opSearch));
    const std::string megatron = "Megatron-LM's annotation";
    fmt::print("blocks sharded by {}: {} on the full model ({}: {})\n\n",
               estimate.opSearchTaken ? searched : megatron,
               planner::formatSeconds(estimate.stepSeconds),
               estimate.opSearchTaken ? megatron : searched,
               planner::formatSeconds(estimate.opSearchTaken ? estimate.megatronStepSeconds
                                                             : estimate.opSearchStepSeconds));
  }
  fmt::print("step time        {}\n", planner::formatSeconds(estimate.stepSeconds));
  fmt::print("  compute        {}\n", planner::formatSeconds(step.computeSeconds));
  fmt::print("  exposed comm   {}\n", planner::formatSeconds(step.exposedCommunicationSeconds));
  fmt::print("  bubble         {}\n", planner::formatSeconds(step.bubbleSeconds));
  fmt::print("  optimizer      {}\n", planner::formatSeconds(step.optimizerSeconds));
  fmt::print("throughput       {:.0f} tokens/s\n", estimate.tokensPerSecond);
  fmt::print("model TFLOP/s    {:.4g} per GPU (MFU {:.1f}%), {:.4g} with recompute\n\n",
             estimate.tflopsPerGpu, 100 * estimate.mfu, estimate.hardwareTflopsPerGpu);
  fmt::print("{:>5} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10}\n", "stage", "peak", "params",
             "grads", "optimizer", "activations", "comm", "in flight");
  for (size_t s = 0; s < step.stages.size(); ++s) {
    const auto& memory = step.stages[s].memory;
    fmt::print("{:>5} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10}\n", s,
               planner::formatBytes(memory.total()), planner::formatBytes(memory.parameterBytes),
               planner::formatBytes(memory.gradientBytes),
               planner::formatBytes(memory.optimizerBytes),
               planner::formatBytes(memory.activationBytes),
               planner::formatBytes(memory.communicationBytes), step.stages[s].peakInFlight);
  }
  fmt::print("device memory {}: {}\n", planner::formatBytes(estimate.cluster.device.memoryBytes),
             estimate.fits() ? "every stage fits" : "DOES NOT FIT");
}

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
      ->check(positive());
  verb.add_option("--devices-per-node,--simulated-nproc-per-node", config.devicesPerNode,
                  "devices per node of a preset (default: the preset's)")
      ->check(positive());
  verb.add_option("--gbs", config.gbs,
                  "global batch size (required for a transformer; for a graph, samples per step)")
      ->check(positive());
  verb.add_option("--seq", config.seq, "sequence length (default: the model's)")->check(positive());
  verb.add_option("--precision", config.precision, "bf16 | fp16 | fp8")->capture_default_str();
  verb.add_option("--inter-node-gbps", config.interNodeGbps,
                  "inter-node bandwidth per device, Gbit/s (overrides the preset)")
      ->check(positive());
  verb.add_option("--cost-model", flags.costModel,
                  "cost-model constants JSON (default: the compiled-in data/cost_model.json)");
  verb.add_option("--op-search", flags.opSearch,
                  "who shards each block on its TP x CP submesh: megatron (Megatron-LM's "
                  "annotation) | sharding_propagation | recursive_programming | ilp (the op-level "
                  "searches; their sharding is taken where the full model prices it faster)")
      ->capture_default_str();
}

Status applyConfigurationFlags(const ConfigurationFlags& flags, planner::MegatronConfig& config) {
  if (auto status = planner::applyCostModel(flags.costModel); !status) return status.error();
  auto opSearch = planner::parseOpSearch(flags.opSearch);
  if (!opSearch) return opSearch.error();
  config.opSearch = *opSearch;
  return {};
}

}  // namespace autopar::cli
