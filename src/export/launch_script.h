#pragma once
/// \file
/// A bash script that launches a configuration on its cluster with torchrun, one invocation per
/// node (NODE_RANK, MASTER_ADDR and MASTER_PORT from the environment):
///   - Megatron-LM, Megatron-Core, MindSpeed (Megatron on Ascend): `pretrain_gpt.py` from
///     $MEGATRON_LM with the model's dimensions, the parallel degrees, the batch, the precision,
///     recompute, the distributed optimizer and the profile's overlaps (megatronArguments), on
///     mock data;
///   - Megatron-DeepSpeed: the same with the DeepSpeed config it needs for ZeRO, written beside;
///   - torchtitan and PyTorch FSDP: torchtitan's trainer with the plan as a configuration module
///     (torchtitanConfig), run with --module/--config.
/// MindSpore's MindFormers starts from its run yaml (msrun), not from this script; a multimodal
/// model starts from MindSpeed-MM's own scripts.
///   #!/usr/bin/env bash ... torchrun --nnodes 2 --nproc-per-node 8 ... pretrain_gpt.py
///   "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" ...

#include <string>
#include <vector>

#include "frontend/transformer.h"
#include "ir/training_setup.h"
#include "plan/plan.h"
#include "util/expected.h"

namespace autopar::exporters {

/// The script for `config` of `model` (named with the cluster in `inputs`) on `nodes` nodes of
/// `devicesPerNode` devices, with `virtualStageLayers` decoder layers per virtual stage; fails
/// naming the framework or the model feature it cannot launch.
Expected<std::string> launchScript(const ir::TrainingSetup& config,
                                   const plan::InputsRecord& inputs,
                                   const frontend::TransformerConfig& model,
                                   const std::vector<int64_t>& virtualStageLayers, int64_t nodes,
                                   int64_t devicesPerNode);

}  // namespace autopar::exporters
