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
      ->check(positive());
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
      ->check(CLI::Range(0.0, 1024.0));
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
                  "weights, 8)")
      ->capture_default_str();
  verb.add_option(
          "--framework", flags.framework,
          "the framework that runs the plan, whose code path is costed (docs/frameworks.md): " +
              planner::frameworkNames())
      ->capture_default_str();
  auto toggle = [&](const std::string& name, int& value, const std::string& help) {
    verb.add_flag(fmt::format("--{},!--no-{}", name, name), value, help)->group("Code path");
  };
  toggle("overlap-grad-reduce", flags.overlapGradReduce,
         "reduce data-parallel gradients in buckets during the backward");
  toggle("overlap-param-gather", flags.overlapParamGather,
         "all-gather sharded parameters during the forward");
  toggle("tp-comm-overlap", flags.tpCommOverlap,
         "overlap tensor-parallel communication with the GEMMs (Transformer Engine)");
  toggle("async-tensor-model-parallel-allreduce", flags.asyncTpAllreduce,
         "overlap the backward's tensor-parallel communication with the backward GEMMs");
  toggle("overlap-moe-expert-parallel-comm", flags.overlapExpertComm,
         "overlap the mixture-of-experts token all-to-all with another micro-batch's compute "
         "(Megatron-Core 0.14)");
  toggle("grad-reduce-in-bf16", flags.gradReduceInBf16,
         "accumulate and reduce gradients in bf16, not fp32 (bf16 and fp8 precision)");
  toggle("list-collectives", flags.listCollectives,
         "collectives take per-rank tensor lists, one copy per rank (DeepSpeed's ZeRO-3, 2021)");
  toggle("gradient-accumulation-fusion", flags.gradientAccumulationFusion,
         "weight-gradient GEMMs accumulate into the gradient buffer in place");
  toggle("fused-elementwise", flags.fusedElementwise,
         "chains of elementwise ops run as one kernel (Megatron's fusions, torch.compile); under "
         "--selective-op-policy, torch.compile also keeps only the saved outputs the backward "
         "needs");
  toggle("in-place-loss-gradient", flags.inPlaceLossGradient,
         "the cross entropy's gradient is written into its kept fp32 softmax (Megatron); "
         "without it, two fp32 logits-sized buffers (PyTorch's log_softmax)");
  toggle("stash-gathered-inputs", flags.stashGatheredInputs,
         "a GEMM that reads a gathered activation keeps its sharded source and gathers it again "
         "in the backward (Megatron-LM); without it, the gathered input is kept (PyTorch DTensor)");
  toggle("pipeline-keeps-outputs", flags.pipelineKeepsOutputs,
         "under pipeline parallelism every micro-batch's stage output is kept until the step "
         "ends, the last stage's fp32 logits (torch.distributed.pipelining)");
  toggle("ring-merges-in-fp32", flags.ringMergesInFp32,
         "under --cp each ring step's attention output is merged by separate fp32 kernels and the "
         "query and key/value gradients accumulate in fp32 (PyTorch's context_parallel)");
  toggle("fsdp-root-stays-gathered", flags.fsdpRootStaysGathered,
         "under --zero 3 the parameters outside the layers and the last layer's stay gathered "
         "from forward to backward (FSDP2's root, torchtitan's last block)");
  toggle("selective-op-policy", flags.selectiveOpPolicy,
         "--recompute selective keeps the attention and every other matmul's output and "
         "recomputes the rest of each layer (torchtitan); without it, the attention core alone "
         "is recomputed (Megatron)");
  toggle("grad-sync-in-place", flags.gradientSyncInPlace,
         "the data-parallel gradient sync runs in place in one contiguous gradient buffer "
         "(Megatron's DDP and distributed optimizer); without it, a communication buffer per sync");
  toggle("fp8-weight-cache", flags.fp8WeightCache,
         "under --precision fp8 each fp8 GEMM's weight is kept cast to fp8, with its transpose, "
         "for the whole step (Transformer Engine); without it, cast anew at every use (torchao)");
  verb.add_option(
          "--attention", flags.attention,
          "flash (FlashAttention-2, PyTorch's SDPA) | cudnn (Transformer Engine's) | unfused "
          "(the score matrix in memory, Megatron-LM before 2023); "
          "default: the framework's")
      ->group("Code path");
}

Status applyConfigurationFlags(const ConfigurationFlags& flags, planner::MegatronConfig& config) {
  if (auto status = planner::applyCostModel(flags.costModel); !status) return status.error();
  auto opSearch = planner::parseOpSearch(flags.opSearch);
  if (!opSearch) return opSearch.error();
  config.opSearch = *opSearch;
  auto framework = planner::parseFramework(flags.framework);
  if (!framework) return framework.error();
  config.framework = *framework;
  config.memoryMarginBytes = static_cast<int64_t>(flags.memoryMarginGib * (1LL << 30));
  auto optimizerState = cost::parseOptimizerState(flags.optimizerState);
  if (!optimizerState) return optimizerState.error().in("--optimizer-state");
  config.optimizerState = *optimizerState;
  planner::CodePath& code = config.codePath;
  code = planner::frameworkProfile(*framework).codePath;
  for (const auto& [given, field] :
       {std::pair{flags.overlapGradReduce, &code.overlapGradReduce},
        {flags.overlapParamGather, &code.overlapParamGather},
        {flags.tpCommOverlap, &code.tpCommOverlap},
        {flags.asyncTpAllreduce, &code.asyncTpAllreduce},
        {flags.overlapExpertComm, &code.overlapExpertComm},
        {flags.gradReduceInBf16, &code.gradReduceInBf16},
        {flags.listCollectives, &code.listCollectives},
        {flags.gradientAccumulationFusion, &code.gradientAccumulationFusion},
        {flags.fusedElementwise, &code.fusedElementwise},
        {flags.inPlaceLossGradient, &code.inPlaceLossGradient},
        {flags.stashGatheredInputs, &code.stashGatheredInputs},
        {flags.pipelineKeepsOutputs, &code.pipelineKeepsOutputs},
        {flags.ringMergesInFp32, &code.ringMergesInFp32},
        {flags.fsdpRootStaysGathered, &code.fsdpRootStaysGathered},
        {flags.selectiveOpPolicy, &code.selectiveOpPolicy},
        {flags.gradientSyncInPlace, &code.gradientSyncInPlace},
        {flags.fp8WeightCache, &code.fp8WeightCache}}) {
    if (given != 0) *field = given > 0;
  }
  if (!flags.attention.empty()) {
    using frontend::AttentionKernel;
    if (flags.attention == "flash")
      code.attention = AttentionKernel::kFlash;
    else if (flags.attention == "cudnn")
      code.attention = AttentionKernel::kCudnn;
    else if (flags.attention == "unfused")
      code.attention = AttentionKernel::kUnfused;
    else {
      return Error{
          fmt::format("--attention {}: expected flash, cudnn or unfused", flags.attention)};
    }
  }
  return {};
}

}  // namespace autopar::cli
