#pragma once
/// \file
/// The operator-strategy JSON that MindSpore loads with
/// `mindspore.parallel.set_op_strategy_config(mode="LOAD", path=...)` (the layout is in
/// frontend/mindspore_strategy.h, which reads it back for `plan --strategy-file`): every op's input
/// strategy and pipeline stage, keyed by the op's name.

#include <nlohmann/json.hpp>

#include "plan/plan.h"

namespace autopar::exporters {

/// Keys sorted, as MindSpore's nlohmann::json writes them.
nlohmann::json mindsporeOpStrategy(const plan::Plan& plan);

}  // namespace autopar::exporters
