#include "export/mindspore_strategy.h"

namespace autopar::exporters {

nlohmann::json mindsporeOpStrategy(const plan::Plan& plan) {
  nlohmann::json items = nlohmann::json::object();
  for (const plan::OpRecord& op : plan.ops) {
    items[op.name] = {{"parallel_strategy", op.strategy}, {"stage", op.stage}};
  }
  // MindSpore's SAVE writes current_stage 0 (StrategyCheckpointInfo::Init); LOAD ignores it.
  return {{"current_stage", 0}, {"parallel_strategy_item", std::move(items)}};
}

}  // namespace autopar::exporters
