#pragma once
/// \file
/// torchtitan's job config (the TOML its train.py reads, `torchtitan/config/job_config.py`) for a
/// configuration: FSDP2 or DDP over the data-parallel ranks, tensor, pipeline and context
/// parallelism, the micro-batch, activation checkpointing and float8 linears.
///   TP 2, DP 4 with ZeRO 3, MBS 2: [parallelism] data_parallel_shard_degree = 4,
///   tensor_parallel_degree = 2, ... [training] local_batch_size = 2

#include <string>

#include "ir/training_setup.h"

namespace autopar::exporters {

/// The [parallelism], [training], [activation_checkpoint] and (fp8) [model] sections.
std::string torchtitanConfig(const ir::TrainingSetup& config);

}  // namespace autopar::exporters
