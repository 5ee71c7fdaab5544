#pragma once
/// \file
/// MindSpore's operator-strategy file, the JSON that
/// `mindspore.parallel.set_op_strategy_config(mode="SAVE" | "LOAD", path=...)` writes and reads
/// (MindSpore's frontend/parallel/strategy_checkpoint/strategy_checkpoint_info.cc,
/// StrategyCheckpointInfo::to_json and StrategyJsonInfo::FromJson):
///
///   {"current_stage": 0,
///    "parallel_strategy_item": {
///      "dense1.matmul": {"stage": 0, "parallel_strategy": [[2, 4], [4, 1]]}, ...}}
///
/// Each op's key is its name (MindSpore's fullname_with_scope), `parallel_strategy` its split of
/// every input dim, `stage` its pipeline stage. MindSpore also writes "parallel_out_strategy_item"
/// (output strategies) and, for ops with layouts, "parallel_layout_value_item" and its kin; autopar
/// reads the input strategies and refuses a file that needs the rest, since dropping them would
/// load a different plan. docs/mindformers-yaml.md describes both directions.

#include <string>
#include <utility>
#include <vector>

#include "ir/op.h"
#include "util/expected.h"

namespace autopar::frontend {

struct OpStrategyEntry {
  std::string op;
  ir::StrategyCuts strategy;
  int stage = 0;
};

/// The file's input strategies, in key order. Errors name the file and the field:
///   "s.json: parallel_strategy_item.dense1.matmul.parallel_strategy[1][0]: expected a positive
///    integer, got 0"
Expected<std::vector<OpStrategyEntry>> readOpStrategyFile(const std::string& path);

}  // namespace autopar::frontend
