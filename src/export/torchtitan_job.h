#pragma once
/// \file
/// torchtitan's job configuration of a plan for torchtitan@2026-02: torchtitan v0.2.2
/// (73a0e6979, 2026-02-20), the last release that reads TOML job configs
/// (`torchrun -m torchtitan.train --job.config_file FILE`), the form of torchtitan's benchmarks
/// and of every recipe before 9810191 moved them to Python modules. Written against v0.2.2's
/// `torchtitan/config/job_config.py`, `torchtitan/train.py` and `torchtitan/models/llama3/`:
///   - the model is registered as llama3 flavor "autopar" by a module that
///     `[experimental] custom_import` imports before the trainer looks the flavor up, as its own
///     flavors are (`llama3_args`, `TransformerModelArgs`): its dimensions, RoPE base and
///     scaling, and norm epsilon; the MLP width through `multiple_of` (torchtitan rounds
///     int(8 x dim / 3) up to a multiple of it);
///   - FSDP2 (`data_parallel_shard_degree`, `fsdp_reshard_after_forward = "never"` for ZeRO 2) or
///     DDP (`data_parallel_replicate_degree`), tensor, pipeline and context parallelism;
///   - the batch in samples: `local_batch_size` per replica and accumulation step (the whole
///     replica's batch under a pipeline, cut in `pipeline_parallel_microbatch_size`) and
///     `global_batch_size`, from which the trainer derives the accumulation steps;
///   - activation checkpointing (full, per-op selective or none), float8 linears and
///     torch.compile; the data, optimizer and schedule of its `llama3_8b.toml`.
///   TP 2, DP 4 with ZeRO 3, MBS 2, GBS 32: [parallelism] data_parallel_shard_degree = 4,
///   tensor_parallel_degree = 2; [training] local_batch_size = 2, global_batch_size = 32.

#include <string>

#include "frontend/transformer.h"
#include "ir/training_setup.h"
#include "util/expected.h"

namespace autopar::exporters {

/// The release whose configuration this writes.
inline constexpr std::string_view kTorchtitanTomlRelease = "2026-02";

/// Whether a torchtitan release (a ProfileRelease's tag; empty: the profile's own) read TOML job
/// configs: torchtitan@2026-02 and the releases before it, which get v0.2.2's form.
[[nodiscard]] inline bool readsTorchtitanJob(std::string_view release) {
  return !release.empty() && release <= kTorchtitanTomlRelease;
}

/// A job configuration and the module its custom_import names.
struct TorchtitanJob {
  std::string toml;    ///< run with --job.config_file
  std::string flavor;  ///< autopar_flavor.py: llama3_args["autopar"] = TransformerModelArgs(...)
};

/// The two files; fails in one line naming what v0.2.2's llama3 cannot express.
Expected<TorchtitanJob> torchtitanJob(const ir::TrainingSetup& config,
                                      const frontend::TransformerConfig& model);

/// The job's [parallelism], [training] and [activation_checkpoint] sections at sequence `seq`
/// (what the search report prints).
std::string torchtitanJobSummary(const ir::TrainingSetup& config, int64_t seq);

}  // namespace autopar::exporters
