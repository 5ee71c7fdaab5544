#pragma once
/// \file
/// The reports `autopar search` prints. For a transformer
/// (planner/configuration/configuration_search.h): what the search did, the top configurations, the
/// leaders' exact placements, the winner's estimate and its Megatron-LM, MindSpeed-MM and
/// MindFormers settings. For a graph with repeated blocks (planner/graph_search.h): the
/// configurations tried, the ranking and the winner's plan.

#include <cstdint>
#include <string>

#include "plan/plan.h"
#include "planner/configuration/configuration_search.h"
#include "planner/graph_search.h"

namespace autopar::exporters {

/// What a report says beyond the search's result.
struct SearchReportContext {
  std::string model;        ///< as the user named it
  int64_t globalBatch = 0;  ///< samples per step
  std::string profilePath;  ///< a measured block table, if any
  int top = 10;             ///< configurations to list
};

/// The report of a search that found a winner (`found.best`).
std::string formatSearchReport(const planner::ConfigurationSearch& found,
                               const SearchReportContext& context);

/// The report of a graph search that found a winner, `best` its plan.
std::string formatGraphSearchReport(const planner::GraphSearch& found, const plan::Plan& best,
                                    const SearchReportContext& context);

}  // namespace autopar::exporters
