#include "ir/intra_op_problem.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace autopar::ir {

namespace {

Status validateNode(const IntraOpProblem::Node& node, size_t index) {
  if (node.costs.empty()) {
    return Error{fmt::format("nodes.costs[{}]: expected at least one strategy", index)};
  }
  if (node.usages.size() != node.costs.size()) {
    return Error{fmt::format("nodes.usages[{}]: expected {} entries (one per strategy), got {}",
                             index, node.costs.size(), node.usages.size())};
  }
  if (node.end < node.start) {
    return Error{fmt::format("nodes.intervals[{}]: [{}, {}) ends before it starts", index,
                             node.start, node.end)};
  }
  for (size_t s = 0; s < node.costs.size(); ++s) {
    if (node.costs[s] < 0) {
      return Error{fmt::format("nodes.costs[{}][{}]: expected a cost >= 0, got {}", index, s,
                               node.costs[s])};
    }
    if (node.usages[s] < 0) {
      return Error{fmt::format("nodes.usages[{}][{}]: expected a usage >= 0, got {}", index, s,
                               node.usages[s])};
    }
  }
  return {};
}

}  // namespace

Status validateProblem(const IntraOpProblem& problem) {
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    if (auto status = validateNode(problem.nodes[i], i); !status) return status;
  }
  const auto count = static_cast<int>(problem.nodes.size());
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    const auto& edge = problem.edges[e];
    if (edge.from < 0 || edge.from >= count || edge.to < 0 || edge.to >= count) {
      return Error{fmt::format("edges.nodes[{}]: [{}, {}] names a node outside 0..{}", e, edge.from,
                               edge.to, count - 1)};
    }
    const size_t expected =
        static_cast<size_t>(problem.strategies(edge.from)) * problem.strategies(edge.to);
    if (edge.costs.size() != expected) {
      return Error{fmt::format("edges.costs[{}]: expected {} entries ({} x {} strategies), got {}",
                               e, expected, problem.strategies(edge.from),
                               problem.strategies(edge.to), edge.costs.size())};
    }
    for (size_t k = 0; k < edge.costs.size(); ++k) {
      if (edge.costs[k] < 0) {
        return Error{
            fmt::format("edges.costs[{}][{}]: expected a cost >= 0, got {}", e, k, edge.costs[k])};
      }
    }
  }
  return {};
}

Expected<Evaluation> evaluateSolution(const IntraOpProblem& problem,
                                      const std::vector<int>& solution) {
  if (solution.size() != problem.nodes.size()) {
    return Error{fmt::format("solution: expected {} strategies (one per node), got {}",
                             problem.nodes.size(), solution.size())};
  }
  Evaluation result;
  std::map<int64_t, int64_t> delta;  // usage change at each moment
  for (size_t i = 0; i < solution.size(); ++i) {
    const auto& node = problem.nodes[i];
    const int s = solution[i];
    if (s < 0 || s >= static_cast<int>(node.costs.size())) {
      return Error{
          fmt::format("solution[{}]: strategy {} is outside 0..{}", i, s, node.costs.size() - 1)};
    }
    result.cost = saturatingAdd(result.cost, node.costs[static_cast<size_t>(s)]);
    if (node.end > node.start) {
      delta[node.start] += node.usages[static_cast<size_t>(s)];
      delta[node.end] -= node.usages[static_cast<size_t>(s)];
    }
  }
  for (const auto& edge : problem.edges) {
    const size_t k = static_cast<size_t>(solution[static_cast<size_t>(edge.from)]) *
                         problem.strategies(edge.to) +
                     solution[static_cast<size_t>(edge.to)];
    result.cost = saturatingAdd(result.cost, edge.costs[k]);
  }
  int64_t live = 0;
  for (const auto& [moment, change] : delta) {
    live += change;
    result.peakUsage = std::max(result.peakUsage, live);
  }
  result.feasible = true;
  if (result.cost >= kInfiniteCost) {
    result.feasible = false;
    result.reason = "a chosen strategy or edge has infinite cost";
  } else if (problem.usageLimit >= 0 && result.peakUsage > problem.usageLimit) {
    result.feasible = false;
    result.reason = fmt::format("peak usage {} exceeds the usage limit {}", result.peakUsage,
                                problem.usageLimit);
  }
  return result;
}

}  // namespace autopar::ir
