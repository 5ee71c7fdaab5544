#pragma once
/// \file
/// The report of `autopar search` on a cluster of device groups (planner/configuration/
/// group_search.h): one line per plan (each group alone, each set of groups sharing the batch:
/// its devices, configuration, step, tokens/s, dollars per hour and per million tokens), the plan
/// the objective chose and which devices it leaves idle and why, then the chosen plan in detail:
/// a group's search report, or each share's configuration, step and memory and the gradient
/// synchronisation across groups. And the JSON `--out` holds for a plan across groups.

#include <nlohmann/json.hpp>
#include <string>

#include "export/search_report.h"
#include "planner/configuration/group_search.h"

namespace autopar::exporters {

std::string formatGroupSearch(const planner::GroupSearch& search,
                              const SearchReportContext& context);

/// A plan across groups as `--out` writes it: the step, the synchronisation across groups, and
/// per group its share of the batch and its configuration in seed 003's format
/// (mindspeedOptimalConfig).
nlohmann::ordered_json sharedPlanJson(const planner::GroupSearch& search,
                                      const planner::SharedPlan& plan);

}  // namespace autopar::exporters
