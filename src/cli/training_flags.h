#pragma once
/// \file
/// The flags that set a plan's training setup (ir::TrainingSetup: pipeline, schedule, recompute,
/// block placement) and its planner::TrainingFlags (micro-batches, optimizer parallel, fusion,
/// host placement, manual split) on a verb.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ir/training_setup.h"
#include "planner/training_options.h"

namespace autopar::cli {

/// The flags given as names or BLOCK=VALUE / OP=VALUES text, which applyTrainingFlagText types.
struct TrainingFlagText {
  std::string schedule = "1f1b";             ///< --schedule 1f1b | interleaved | gpipe | zb-h1
  std::string recompute = "none";            ///< --recompute none | selective | full
  std::string bucketing = "none";            ///< --bucketing none | size | layer
  int64_t virtualStages = 0;                 ///< --virtual-stages; 0: not given
  std::vector<std::string> stages;           ///< --stage BLOCK=STAGE
  std::vector<std::string> chunks;           ///< --chunk BLOCK=CHUNK
  std::vector<std::string> fusion;           ///< --comm-fusion BLOCK=ID
  std::vector<std::string> recomputeBlocks;  ///< --recompute-block BLOCK
  std::vector<std::string> manualSplits;     ///< --manual-split OP=10,20,30,4
};

void addTrainingFlags(CLI::App& verb, ir::TrainingSetup& setup, planner::TrainingFlags& flags,
                      TrainingFlagText& text);

/// Puts `text` into `setup` and `flags` typed: the schedule and its model chunks, the layer
/// recompute, the block assignments in the order the graph takes them (stages, chunks, fusion
/// ids, recomputed blocks), the gradient bucketing and the manual splits. Errors name the flag:
/// "--stage 'layer1': expected BLOCK=STAGE, e.g. llm.layer.3=1".
Status applyTrainingFlagText(const TrainingFlagText& text, ir::TrainingSetup& setup,
                             planner::TrainingFlags& flags);

}  // namespace autopar::cli
