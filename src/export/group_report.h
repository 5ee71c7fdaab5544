#pragma once
/// \file
/// The report of `autopar search` on a cluster of device groups (planner/configuration/
/// group_search.h): one line per group (its devices, its best configuration, step, tokens/s,
/// dollars per hour and per million tokens), the group the objective chose and why the others
/// are idle, then the chosen group's search report.

#include <string>

#include "export/search_report.h"
#include "planner/configuration/group_search.h"

namespace autopar::exporters {

std::string formatGroupSearch(const planner::GroupSearch& search,
                              const SearchReportContext& context);

}  // namespace autopar::exporters
