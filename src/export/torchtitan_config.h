#pragma once
/// \file
/// torchtitan's configuration of a plan: a Python module whose function returns a
/// `Trainer.Config`, run as `torchrun -m torchtitan.train --module autopar_plan --config
/// autopar_plan`, the form torchtitan takes since it removed its TOML job configs (9810191).
/// Written against torchtitan b5bcd76 (`torchtitan/config/configs.py`, `torchtitan/trainer.py`,
/// `torchtitan/models/llama3/`):
///   - the model is torchtitan's llama3 built with the model's own dimensions, RoPE base and
///     scaling, and tied embeddings, as torchtitan builds its own flavors; a model that is not a
///     Llama (biases, LayerNorm, GeLU, learned or ALiBi positions, experts) is refused;
///   - FSDP2 (ZeRO 2 and 3, `data_parallel_shard_degree`) or DDP
///   (`data_parallel_replicate_degree`),
///     tensor, pipeline and context parallelism, the schedule and its micro-batches;
///   - the batch in tokens (`num_tokens_per_microbatch_per_dp_rank`, `num_tokens_per_train_step`),
///     activation checkpointing (FullAC, SelectiveAC or none), float8 linears and torch.compile;
///   - the data, tokenizer and optimizer of torchtitan's Llama 3.1 8B recipe (`llama3_8b`).
///   TP 2, DP 4 with ZeRO 3, MBS 2, sequence 4096: ParallelismConfig(data_parallel_shard_degree=4,
///   tensor_parallel_degree=2, ...), TrainingConfig(num_tokens_per_microbatch_per_dp_rank=8192,
///   ...)

#include <string>
#include <string_view>

#include "frontend/transformer.h"
#include "ir/training_setup.h"
#include "util/expected.h"

namespace autopar::exporters {

/// What torchtitan's llama3 model cannot be (a vision tower, experts, GeLU, LayerNorm, learned or
/// ALiBi positions, biases, a RoPE scaling other than Llama 3's): the first difference, or "".
std::string unlikeTorchtitanLlama(const frontend::TransformerConfig& model);

/// What torchtitan runs of a plan, whichever form configures it. Data parallelism: ZeRO 3 is
/// FSDP2's default (parameters resharded after the forward), ZeRO 2 keeps them gathered until the
/// backward (reshard "never"); ZeRO 0 and 1 replicate (DDP: torchtitan has no sharded optimizer
/// without sharded parameters). Async TP where the plan overlaps tensor-parallel communication
/// (TP > 1), and torch.compile for the profile's fused elementwise chains and for async TP, which
/// needs it.
struct TorchtitanRun {
  int64_t replicateDegree = 1;
  int64_t shardDegree = 1;
  bool reshardNever = false;
  bool asyncTp = false;
  bool compile = false;
};
TorchtitanRun torchtitanRun(const ir::TrainingSetup& config);

/// The comment lines both forms write where the plan differs from what torchtitan can run: a
/// gradient reduction in bf16 (torchtitan reduces in float32 only), and a vocabulary other than
/// the recipe's tokenizer's (`assetsKey`: where to name the model's, "config.hf_assets_path").
std::string torchtitanReduceNote(const ir::TrainingSetup& config);
std::string torchtitanTokenizerNote(const frontend::TransformerConfig& model,
                                    std::string_view assetsKey);

/// The module's text; fails in one line naming what torchtitan's llama3 cannot express.
Expected<std::string> torchtitanConfig(const ir::TrainingSetup& config,
                                       const frontend::TransformerConfig& model);

/// The module's parallelism, batch and activation checkpointing at sequence `seq`, one line each
/// (what the search report prints; --launch-script writes the whole module).
std::string torchtitanSummary(const ir::TrainingSetup& config, int64_t seq);

}  // namespace autopar::exporters
