#pragma once
/// \file
/// MindFormers run yamls (docs/mindformers-yaml.md): the parallel part (parallel_config and
/// recompute_config) the search report prints, and a complete run yaml (parallel, parallel_config,
/// recompute_config, runner_config, model) that MindFormers trains with and `autopar plan
/// --config` reads back.

#include <cstdint>
#include <string>

#include "frontend/transformer.h"
#include "ir/training_setup.h"
#include "plan/plan.h"

namespace autopar::exporters {

/// parallel_config, recompute_config and runner_config's batch: `microBatches` per step are
/// micro_batch_num under a pipeline, and without one (where MindFormers sets micro_batch_num to 1)
/// runner_config.gradient_accumulation_steps.
std::string mindformersParallelConfig(const ir::TrainingSetup& config, int64_t microBatches);

/// The complete run yaml of `config` with `model` (its sequence `sequence`; named with the
/// cluster in `inputs`), semi-auto parallel
/// with full batches, so that batch_size x data_parallel x micro_batch_num is the global batch.
/// Context and expert parallelism (MindFormers' context_parallel and expert_parallel) are written
/// as MindFormers takes them; `autopar plan --config` refuses them (it does not model them).
std::string mindformersRunYaml(const ir::TrainingSetup& config, const plan::InputsRecord& inputs,
                               const frontend::TransformerConfig& model, int64_t microBatches,
                               int64_t sequence);

}  // namespace autopar::exporters
