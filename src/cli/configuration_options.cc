#include "cli/configuration_options.h"

#include <fmt/format.h>

#include "cli/verbs.h"
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
