#include "search/op_level/propagation.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <tuple>

#include "layout/strategy.h"
#include "search/op_level/propagator.h"

namespace autopar::search {

namespace {

using detail::CandidateTable;
using detail::Propagator;

/// An unannotated graph's anchor strategies whose spreads are refined (the least objective ones).
constexpr size_t kRefinedAnchors = 3;
/// The anchor strategies spread from: the least node cost ones (objective.h).
constexpr size_t kSpreadAnchors = 12;

/// The heaviest op (forward FLOPs; the lower id on a tie): where an unannotated graph anchors.
ir::OpId heaviestOp(const ir::Graph& graph) {
  ir::OpId best = 0;
  for (const ir::Op& op : graph.ops()) {
    if (graph.forwardFlops(op) > graph.forwardFlops(graph.op(best))) best = op.id;
  }
  return best;
}

/// With nothing annotated, MindSpore's propagation has nowhere to start: it refuses the graph.
/// Here the heaviest op anchors it. Propagation runs from each of that op's full-device
/// strategies, and the assignment with the least op-level objective (objective.h: the sum the
/// ILP minimises) is kept; on a tie, the strategy listed first.
Expected<PropagationResult> propagateFromBestAnchor(const ir::Graph& graph,
                                                    const std::vector<int>& ranks,
                                                    const cluster::Cluster& cluster,
                                                    const PropagationOptions& options,
                                                    CandidateTable& table) {
  const ir::Op& anchor = graph.op(heaviestOp(graph));
  auto candidates = table.candidates(anchor.id);
  if (!candidates) return candidates.error().in(fmt::format("op '{}'", anchor.name));
  // Spread from every anchor strategy; refine the kRefinedAnchors spreads of least objective.
  struct Run {
    double seconds = 0;
    size_t anchor = 0;  ///< index among the candidates
    std::unique_ptr<Propagator> propagator;
    PropagationResult result;
  };
  auto screened = table.leastNodeCost(anchor.id, kSpreadAnchors);
  if (!screened) return screened.error();
  std::vector<Run> runs;
  for (CandidateTable::Candidate* start : *screened) {
    const auto c = static_cast<size_t>(start - (*candidates)->data());
    Run run{0, c, std::make_unique<Propagator>(graph, ranks, cluster, options, table), {}};
    run.propagator->choose(anchor.id, *start);
    if (auto status = run.propagator->spread(run.result); !status) return status.error();
    auto seconds = run.propagator->objectiveSeconds();
    if (!seconds) return seconds.error();
    run.seconds = *seconds;
    runs.push_back(std::move(run));
  }
  if (runs.empty()) {
    return Error{fmt::format("op '{}': no strategy fits {} devices", anchor.name, ranks.size())};
  }
  auto byObjective = [](const Run& a, const Run& b) {
    return std::tie(a.seconds, a.anchor) < std::tie(b.seconds, b.anchor);
  };
  std::sort(runs.begin(), runs.end(), byObjective);
  runs.resize(std::min(runs.size(), kRefinedAnchors));
  for (Run& run : runs) {
    if (auto status = run.propagator->refine(anchor.id, run.result); !status) return status.error();
    auto seconds = run.propagator->objectiveSeconds();
    if (!seconds) return seconds.error();
    run.seconds = *seconds;
  }
  Run& best = *std::min_element(runs.begin(), runs.end(), byObjective);
  auto moved = best.propagator->respreadComponents(anchor.id, best.result);
  if (!moved) return moved.error();
  auto rolesMoved = best.propagator->respreadRoles(anchor.id, best.result);
  if (!rolesMoved) return rolesMoved.error();
  if (*moved || *rolesMoved) {
    if (auto status = best.propagator->refine(anchor.id, best.result); !status) {
      return status.error();
    }
    auto seconds = best.propagator->objectiveSeconds();
    if (!seconds) return seconds.error();
    best.seconds = *seconds;
  }
  best.result.cuts = best.propagator->cuts();
  best.result.log.insert(
      best.result.log.begin(),
      fmt::format("no annotated op: anchored at '{}' {}, the least objective ({:.3g} s) of its {} "
                  "strategies, the best {} refined",
                  anchor.name,
                  layout::strategyToString(rules::strategyFromFactorCuts(
                      table.rule(anchor.id), (**candidates)[best.anchor].cuts)),
                  best.seconds, (*candidates)->size(), runs.size()));
  return std::move(best.result);
}

}  // namespace

Expected<PropagationResult> propagateStrategies(const ir::Graph& graph,
                                                const std::vector<int>& ranks,
                                                const cluster::Cluster& cluster,
                                                const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                                const PropagationOptions& options) {
  CandidateTable table(graph, ranks, cluster, options);
  if (auto status = table.loadRules(); !status) return status.error();
  if (fixed.empty()) {
    PropagationOptions anchored = options;
    anchored.priceParameterSync = true;
    return propagateFromBestAnchor(graph, ranks, cluster, anchored, table);
  }
  Propagator propagator(graph, ranks, cluster, options, table);
  PropagationResult result;
  for (const auto& [op, cuts] : fixed) {
    if (auto status = propagator.fix(op, cuts); !status) return status.error();
  }
  if (auto status = propagator.spread(result); !status) return status.error();
  if (auto status = propagator.collectConflicts(fixed, result); !status) return status.error();
  result.cuts = propagator.cuts();
  return result;
}

}  // namespace autopar::search
