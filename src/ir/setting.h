#pragma once
/// \file
/// The settings a user gives autopar, each named once. The library's messages and advice name a
/// setting through this table, never by its spelling: "--tp 3: expected a divisor of ..." is
/// flag(Setting::kTp, 3) followed by the reason, and the run yaml's keys, the Python keywords and
/// the command line's flags are the front ends' spellings of the same names. The code path's
/// switches are named in their own table (cost::codePathSwitches, cost::switchFlag).
///   flag(Setting::kPipelineStages, 8) == "--pipeline-stages 8"
///   settingNamed("no-mp-comm-recompute") == Setting::kMpCommRecompute

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

namespace autopar::ir {

enum class Setting {
  // What is planned, and on what.
  kModel,
  kConfig,  ///< a MindFormers-style run yaml
  kNodes,
  kDevicesPerNode,
  kAllowIdle,     ///< plan on fewer devices than the nodes hold
  kNnodes,        ///< the nodes a --profile table was measured on
  kNprocPerNode,  ///< the devices per node a --profile table was measured on
  kFramework,
  kPrecision,
  // Megatron-style degrees and batch (`autopar estimate`, `autopar search`).
  kTp,
  kPp,
  kDp,
  kVpp,
  kCp,
  kEp,
  kMbs,
  kGbs,
  kZero,
  kZeroBubble,
  kSequenceParallel,
  kFp8ParamGather,
  kRecompute,
  kLlmLayers,  ///< a placement: the language model's layers per stage
  kVitLayers,  ///< a placement: the vision tower's layers per stage
  kLlmRecompute,
  kVitRecompute,
  kPlace,
  kProfile,
  kClosedForm,
  // MindSpore-style plan settings (`autopar plan`).
  kPipelineStages,
  kMicroBatch,
  kMicroBatches,
  kDpShares,  ///< uneven data-parallel shares of the batch
  kSchedule,
  kVirtualStages,
  kMpCommRecompute,  ///< spelt as its negation: no-mp-comm-recompute
  kParallelOptimizerCommRecompute,
  kRecomputeSliceActivation,
  kOptimizerParallel,
  kOptimizerThreshold,
  kGradientAccumulationShard,
  kAllToAll,
  kSearch,
  kOpSearch,
  kMemCoeff,
  kStrategyFile,
  kMindsporeStrategy,
  // Per-block and per-op settings of a graph.
  kStage,
  kChunk,
  kCommFusion,
  kRecomputeBlock,
  kManualSplit,
  kRecomputeOp,
  kHostOp,
  // `autopar calibrate`.
  kFit,
};

/// "tp", "pipeline-stages": the setting's name, as its flag spells it without the dashes.
std::string_view settingName(Setting setting);

/// The setting of this name; none for a name the table does not hold.
std::optional<Setting> settingNamed(std::string_view name);

/// "--tp": the flag that gives the setting.
std::string flag(Setting setting);

/// "--tp 4": the flag with the value it was given.
template <typename Value>
std::string flag(Setting setting, const Value& value) {
  return fmt::format("--{} {}", settingName(setting), value);
}

}  // namespace autopar::ir
