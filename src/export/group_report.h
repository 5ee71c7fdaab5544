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
#include "util/expected.h"

namespace autopar::exporters {

std::string formatGroupSearch(const planner::GroupSearch& search,
                              const SearchReportContext& context);

/// A plan across groups as `--out` writes it: the step, the synchronisation across groups, and
/// per group its share of the batch and its configuration in seed 003's format
/// (mindspeedOptimalConfig).
nlohmann::ordered_json sharedPlanJson(const planner::GroupSearch& search,
                                      const planner::SharedPlan& plan);

/// A pipeline across groups as `--out` writes it: the step, the crossing, and its configuration
/// in seed 003's format (layer_placement per stage), with each stage's group and device, and each
/// block's stage as `autopar plan --stage` takes it (`stage_blocks`).
nlohmann::ordered_json pipelinePlanJson(const planner::GroupSearch& search,
                                        const planner::SplitPipeline& pipeline);

/// The launch script of a pipeline across groups: one Megatron-LM job over both groups' nodes,
/// the first group's nodes first (pipeline stages are the outermost rank dimension, so its
/// stages land on them), the uneven layers per stage as Megatron-LM's pipeline layout. Fails for
/// groups of different node sizes, or what launchScript fails on.
Expected<std::string> pipelineLaunchScript(const planner::GroupSearch& search,
                                           const planner::SplitPipeline& pipeline,
                                           const std::string& model);

}  // namespace autopar::exporters
