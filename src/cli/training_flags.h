#pragma once
/// \file
/// The flags that set planner::TrainingFlags (pipeline, recompute, optimizer parallel, fusion,
/// host placement, manual split) on a verb.

#include <CLI/CLI.hpp>

#include "planner/training_options.h"

namespace autopar::cli {

void addTrainingFlags(CLI::App& verb, planner::TrainingFlags& flags);

}  // namespace autopar::cli
