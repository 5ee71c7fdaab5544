#pragma once
/// \file
/// Megatron-LM's command-line arguments for a configuration: the parallel degrees, the batch,
/// sequence parallelism, recompute, the distributed optimizer and, when the layers are not split
/// evenly, the flags that place them.
///   TP 8, PP 4, MBS 1, GBS 128, layers 20/20/20/20:
///     "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 --micro-batch-size 1
///      --global-batch-size 128"

#include <cstdint>
#include <string>
#include <vector>

#include "planner/configuration_estimate.h"

namespace autopar::exporters {

/// Megatron-Core's --pipeline-model-parallel-layout: the virtual stages in order (chunk c of
/// stage s is the c P + s-th), "E" the embedding, "t" a decoder layer, "L" the loss (head), e.g.
/// "Et*4|t*5|t*5|t*3,L" for 4, 5, 5 and 3 layers on 4 stages.
std::string pipelineLayout(const std::vector<int64_t>& virtualStageLayers);

/// The arguments of `config` with `virtualStageLayers` decoder layers per virtual stage (per
/// stage without interleaving), its ZeRO stage (the distributed optimizer, Megatron-FSDP, or
/// DeepSpeed's under megatron-deepspeed) and the switches its framework profile's code path
/// needs (Megatron-Core's overlaps): flags and values only, so the line pastes into a shell.
std::string megatronArguments(const planner::MegatronConfig& config,
                              const std::vector<int64_t>& virtualStageLayers);

/// What the arguments cannot say, one line each (the zero-bubble schedule, per-layer recompute);
/// empty when they say everything.
std::vector<std::string> megatronNotes(const planner::MegatronConfig& config);

}  // namespace autopar::exporters
