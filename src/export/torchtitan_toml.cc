#include "export/torchtitan_toml.h"

#include <fmt/format.h>

namespace autopar::exporters {

std::string torchtitanConfig(const ir::TrainingSetup& config) {
  // ZeRO 3 is FSDP2's default (parameters resharded after the forward), ZeRO 2 keeps them
  // gathered until the backward ("never"); ZeRO 0 replicates (DDP).
  const bool sharded = config.zero >= 2;
  std::string text = "[parallelism]\n";
  text += fmt::format("data_parallel_replicate_degree = {}\n", sharded ? 1 : config.dp);
  text += fmt::format("data_parallel_shard_degree = {}\n", sharded ? config.dp : 1);
  if (config.zero == 2) text += "fsdp_reshard_after_forward = \"never\"\n";
  text += fmt::format("tensor_parallel_degree = {}\n", config.tp);
  if (config.tp > 1 && config.codePath.tpCommOverlap) {
    text += "enable_async_tensor_parallel = true\n";
  }
  text += fmt::format("pipeline_parallel_degree = {}\n", config.pp);
  if (config.pp > 1) {
    text += fmt::format("pipeline_parallel_schedule = \"{}\"\n",
                        config.vpp > 1 ? "Interleaved1F1B" : "1F1B");
    text += fmt::format("pipeline_parallel_microbatch_size = {}\n", config.mbs);
  }
  text += fmt::format("context_parallel_degree = {}\n", config.cp);
  // The cost model prices PyTorch's all-gather ring (docs/frameworks.md, "CP steps merged in
  // fp32"): say so rather than rely on the trainer's default.
  if (config.cp > 1) text += "context_parallel_rotate_method = \"allgather\"\n";
  // Without pipelining the local batch is the micro-batch (one per step per replica, as
  // torchtitan runs it); with it, the micro-batches of a step.
  const int64_t local = config.pp > 1 ? config.mbs * config.microBatches() : config.mbs;
  text += fmt::format("\n[training]\nlocal_batch_size = {}\nglobal_batch_size = {}\n", local,
                      config.gbs);
  if (config.seq > 0) text += fmt::format("seq_len = {}\n", config.seq);
  if (config.codePath.gradReduceInBf16) text += "mixed_precision_reduce = \"bfloat16\"\n";
  text += fmt::format("\n[activation_checkpoint]\nmode = \"{}\"\n",
                      ir::recomputeName(config.recompute));
  if (config.recompute == ir::Recompute::kSelective) text += "selective_ac_option = \"op\"\n";
  if (config.precision == "fp8") text += "\n[model]\nconverters = [\"float8\"]\n";
  // fp8 parameters (--fp8-param-gather) are torchao's float8 all-gather under FSDP2: the sharded
  // weights are cast before the gather, which then moves 1 byte an element.
  if (config.precision == "fp8" && config.fp8ParamGather) {
    text +=
        "\n[float8]\nenable_fsdp_float8_all_gather = true\n"
        "precompute_float8_dynamic_scale_for_fsdp = true\n";
  }
  return text;
}

}  // namespace autopar::exporters
