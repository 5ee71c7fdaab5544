#include "export/group_report.h"

#include <fmt/format.h>

#include "ir/parallel_config.h"

namespace autopar::exporters {

namespace {

std::string dollars(double value) { return value > 0 ? fmt::format("{:.2f}", value) : "-"; }

/// "TP 2 PP 1 DP 8 MBS 1 SP, recompute none, ZeRO 1", or why the group has no winner.
std::string bestOf(const planner::GroupOutcome& outcome) {
  if (!outcome.found) return "nothing fits";
  const planner::MegatronConfig& best = *outcome.found->best;
  return fmt::format("{}, recompute {}, ZeRO {}", ir::shapeName(best),
                     ir::recomputeName(best.recompute), best.zero);
}

}  // namespace

std::string formatGroupSearch(const planner::GroupSearch& search,
                              const SearchReportContext& context) {
  const bool cost = search.objective == planner::Objective::kCost;
  std::string text =
      fmt::format("autopar search: {} on {}: {} device groups, global batch {}, objective {}\n\n",
                  context.model, search.cluster, search.groups.size(), context.globalBatch,
                  cost ? "cost (dollars per million tokens)" : "fastest");
  text += fmt::format("{:<10} {:>7}  {:<16} {:<44} {:>10} {:>11} {:>9} {:>10}\n", "group",
                      "devices", "device", "best configuration on the group alone", "step",
                      "tokens/s", "$/hour", "$/M tok");
  int idle = 0;
  for (size_t i = 0; i < search.groups.size(); ++i) {
    const planner::GroupOutcome& outcome = search.groups[i];
    text += fmt::format("{:<10} {:>7}  {:<16} {:<44} {:>10} {:>11} {:>9} {:>10}{}\n",
                        outcome.group.name, outcome.group.devices(), outcome.group.device,
                        bestOf(outcome),
                        outcome.found ? fmt::format("{:.3f} s", outcome.stepSeconds) : "-",
                        outcome.found ? fmt::format("{:.0f}", outcome.tokensPerSecond) : "-",
                        dollars(outcome.dollarsPerHour), dollars(outcome.dollarsPerMillionTokens),
                        search.chosen == i ? "  <- chosen" : "");
    if (search.chosen != i) idle += outcome.group.devices();
  }
  for (const planner::GroupOutcome& outcome : search.groups) {
    if (!outcome.found) text += fmt::format("\n{}: {}\n", outcome.group.name, outcome.unmet);
  }
  if (!search.chosen) return text;
  const planner::GroupOutcome& chosen = search.groups[*search.chosen];
  text += fmt::format(
      "\nchosen: {} ({}). The other groups' {} devices stay idle: a plan across device groups "
      "(pipeline stages or data-parallel shares on different kinds) is not searched yet.\n\n",
      chosen.group.name, cost ? "the fewest dollars per million tokens" : "the fastest step", idle);
  return text + formatSearchReport(*chosen.found, context);
}

}  // namespace autopar::exporters
