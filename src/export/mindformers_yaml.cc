#include "export/mindformers_yaml.h"

#include <fmt/format.h>

namespace autopar::exporters {

std::string mindformersParallelConfig(const planner::MegatronConfig& config, int64_t microBatches) {
  return fmt::format(
      "parallel_config:\n  data_parallel: {}\n  model_parallel: {}\n  context_parallel: {}\n"
      "  expert_parallel: {}\n  pipeline_stage: {}\n  micro_batch_num: {}\n  use_seq_parallel: {}\n"
      "  optimizer_shard: {}\nrecompute_config:\n  recompute: {}\n  select_recompute: {}\n",
      config.dp, config.tp, config.cp, config.ep, config.pp, microBatches,
      config.sequenceParallel ? "True" : "False", config.zero > 0 ? "True" : "False",
      config.recompute == ir::Recompute::kFull ? "True" : "False",
      config.recompute == ir::Recompute::kSelective ? "True" : "False");
}

}  // namespace autopar::exporters
