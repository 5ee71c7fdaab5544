#pragma once
/// \file
/// What the HTML report (export/html_report.h) shows for each verb: `estimate` one
/// configuration's timeline and memory; `search` the winner's, with the candidate table (the
/// leaders, then each other parallel shape's best and why it lost); `plan` the plan's timeline
/// and memory with its op strategies and redistributions.

#include <string_view>

#include "export/html_report.h"
#include "export/plan_report.h"
#include "export/search_report.h"
#include "plan/plan.h"
#include "planner/configuration/configuration_estimate.h"
#include "planner/configuration/configuration_search.h"
#include "planner/configuration/group_search.h"
#include "planner/graph_search.h"
#include "planner/plan_evaluation.h"
#include "util/expected.h"

namespace autopar::exporters {

Expected<HtmlReport> estimateHtmlReport(const planner::MegatronConfig& config,
                                        const planner::ConfigEstimate& estimate);

/// `found` has a winner (`found.best`).
Expected<HtmlReport> searchHtmlReport(const planner::ConfigurationSearch& found,
                                      const SearchReportContext& context);

/// A plan across device groups (`plan`, one of `search.shared`): its step, throughput and price,
/// then each group's timeline and memory on its share, on the whole step's time axis, ending in
/// the gradient synchronisation across groups.
Expected<HtmlReport> sharedPlanHtmlReport(const planner::GroupSearch& search,
                                          const planner::SharedPlan& plan,
                                          const SearchReportContext& context);

/// A pipeline across device groups (one of `search.pipelines`): its step and price, then its
/// spliced stages' timeline and memory, each stage named with its group.
Expected<HtmlReport> pipelinePlanHtmlReport(const planner::GroupSearch& search,
                                            const planner::SplitPipeline& pipeline,
                                            const SearchReportContext& context);

/// A graph search's winner `plan` (`found.best`), with the configurations that fit ranked.
Expected<HtmlReport> graphSearchHtmlReport(const planner::GraphSearch& found,
                                           const plan::Plan& plan,
                                           const SearchReportContext& context);

/// A plan that does not fit also shows what would make it fit: its fixes (plan.fixes, each
/// planned), or without any the constraint no change met (`unmet`, planner::FitAdvice::unmet).
Expected<HtmlReport> planHtmlReport(const plan::Plan& plan, const planner::Evaluated& evaluated,
                                    const ReportHeader& header, std::string_view unmet = {});

}  // namespace autopar::exporters
