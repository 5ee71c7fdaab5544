#pragma once
/// \file
/// Megatron-LM's command-line arguments for a training setup (a plan's, or a configuration the
/// search ranks): the parallel degrees, the batch, sequence parallelism, recompute, the
/// distributed optimizer and, when the layers are not split evenly, the flags that place them.
///   TP 8, PP 4, MBS 1, GBS 128, layers 20/20/20/20:
///     "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 --micro-batch-size 1
///      --global-batch-size 128"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/training_setup.h"
#include "plan/plan.h"
#include "util/expected.h"

namespace autopar::exporters {

/// Megatron-Core's --pipeline-model-parallel-layout: the virtual stages in order (chunk c of
/// stage s is the c P + s-th), "E" the embedding, "t" a decoder layer, "L" the loss (head), e.g.
/// "Et*4|t*5|t*5|t*3,L" for 4, 5, 5 and 3 layers on 4 stages.
std::string pipelineLayout(const std::vector<int64_t>& virtualStageLayers);

/// The arguments of `config` with `virtualStageLayers` decoder layers per virtual stage (per
/// stage without interleaving), its ZeRO stage (the distributed optimizer, Megatron-FSDP, or
/// DeepSpeed's under megatron-deepspeed) and the switches its framework profile's code path
/// needs (Megatron-Core's overlaps): flags and values only, so the line pastes into a shell.
std::string megatronArguments(const ir::TrainingSetup& config,
                              const std::vector<int64_t>& virtualStageLayers);

/// The stage of DeepSpeed's zero_optimization config: the setup's ZeRO stage, but 0 where
/// DeepSpeed's BF16_Optimizer runs it (ir::TrainingSetup::bf16OptimizerRuns), which is its own
/// ZeRO 1 and which the pipeline engine requires under bf16 (BigScience's BLOOM-176B script: "bf16
/// must use z0! it implements its own zero stage 1 equivalent").
int deepSpeedZeroStage(const ir::TrainingSetup& config);

/// Decoder layers per virtual stage of a plan: its "llm.layer.<i>" blocks counted by the stage
/// and chunk their ops run on (chunk c of stage s is the c P + s-th).
std::vector<int64_t> virtualStageLayers(const plan::Plan& plan);

/// The arguments of a plan that carries its training setup (an annotated plan does;
/// planner::withMegatronSetup gives an op-level search's plan Megatron-LM's); fails when it has
/// none.
Expected<std::string> megatronArguments(const plan::Plan& plan);

/// `arguments` with each flag and its values on a line of its own, the lines joined by " \\"
/// continuations, so the block still pastes into a shell:
///   "--tensor-model-parallel-size 4 --sequence-parallel" ->
///   "--tensor-model-parallel-size 4 \\\n  --sequence-parallel"
std::string argumentLines(std::string_view arguments);

/// What the arguments cannot say, one line each (the zero-bubble schedule, per-layer recompute);
/// empty when they say everything.
std::vector<std::string> megatronNotes(const ir::TrainingSetup& config);

}  // namespace autopar::exporters
