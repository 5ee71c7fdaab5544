// The Propagator's local moves on a full assignment: coordinate descent one op at a time
// (refine), and whole components spread again (respreadComponents).

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "search/op_level/propagator.h"

namespace autopar::search::detail {

namespace {

/// Coordinate-descent passes (Propagator::refine), and the least relative gain that moves an op:
/// below it, float noise could swap two equal strategies.
constexpr int kRefinePasses = 4;
constexpr double kRefineGain = 1e-9;
/// Propagator::respreadComponents: the heaviest components moved, and the strategies of each
/// component's heaviest op it is spread again from (the least node cost ones).
constexpr size_t kComponentMoves = 4;
constexpr size_t kComponentStarts = 8;

}  // namespace

Status Propagator::refine(ir::OpId anchor, PropagationResult& result) {
  std::vector<bool> dirty(graph_.ops().size(), true);
  dirty[anchor] = false;
  for (int pass = 0; pass < kRefinePasses; ++pass) {
    bool changed = false;
    for (const ir::Op& node : graph_.ops()) {
      if (!dirty[node.id]) continue;
      dirty[node.id] = false;
      auto current = localSeconds(node, *shards_[node.id], chosen_[node.id]);
      if (!current) return current.error().in(fmt::format("op '{}'", node.name));
      double bestSeconds = *current;
      CandidateTable::Candidate* bestCandidate = nullptr;
      auto candidates = table_.candidates(node.id);
      if (!candidates) return candidates.error().in(fmt::format("op '{}'", node.name));
      for (CandidateTable::Candidate& candidate : **candidates) {
        auto seconds = localSeconds(node, candidate.shard, &candidate);
        if (!seconds) return seconds.error().in(fmt::format("op '{}'", node.name));
        if (*seconds < bestSeconds * (1 - kRefineGain)) {
          bestSeconds = *seconds;
          bestCandidate = &candidate;
        }
      }
      if (bestCandidate == nullptr) continue;
      choose(node.id, *bestCandidate);
      changed = true;
      forEachNeighbour(node, [&](ir::OpId neighbour, const ir::Tensor&) {
        dirty[neighbour] = neighbour != anchor;
      });
      result.log.push_back(fmt::format("{}: {} chosen again (pass {}: {} with its neighbours)",
                                       node.name, strategyText(node.id), pass + 1,
                                       formatSeconds(bestSeconds)));
    }
    if (!changed) break;
  }
  return {};
}

Expected<bool> Propagator::respreadComponents(ir::OpId anchor, PropagationResult& result) {
  auto current = objectiveSeconds();
  if (!current) return current.error();
  bool moved = false;
  for (const std::vector<ir::OpId>& component : heaviestComponents(anchor)) {
    const ir::OpId heaviest =
        *std::max_element(component.begin(), component.end(), [&](ir::OpId a, ir::OpId b) {
          return graph_.forwardFlops(graph_.op(a)) < graph_.forwardFlops(graph_.op(b));
        });
    auto starts = table_.candidates(heaviest);
    if (!starts) return starts.error().in(fmt::format("op '{}'", graph_.op(heaviest).name));
    std::vector<std::pair<double, CandidateTable::Candidate*>> ranked;
    for (CandidateTable::Candidate& candidate : **starts) {
      if (&candidate == chosen_[heaviest]) continue;
      auto seconds = table_.nodeSeconds(heaviest, candidate);
      if (!seconds) return seconds.error();
      ranked.emplace_back(*seconds, &candidate);
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    ranked.resize(std::min(ranked.size(), kComponentStarts));
    const Assignment before = assignmentOf(component);
    std::optional<Assignment> best;
    for (const auto& [nodeSeconds, start] : ranked) {
      for (ir::OpId op : component) undecide(op);
      choose(heaviest, *start);
      PropagationResult scratch;
      if (auto status = spread(scratch); !status) return status.error();
      auto seconds = objectiveSeconds();
      if (!seconds) return seconds.error();
      if (*seconds < *current * (1 - kRefineGain)) {
        current = *seconds;
        best = assignmentOf(component);
      }
      restore(before);
    }
    if (!best) continue;
    restore(*best);
    moved = true;
    result.log.push_back(
        fmt::format("{} ops joined without redistribution spread again from '{}' {}: objective {}",
                    component.size(), graph_.op(heaviest).name, strategyText(heaviest),
                    formatSeconds(*current)));
  }
  return moved;
}

Propagator::Assignment Propagator::assignmentOf(const std::vector<ir::OpId>& ops) const {
  Assignment assignment;
  for (ir::OpId op : ops) assignment.emplace_back(op, cuts_[op], chosen_[op]);
  return assignment;
}

void Propagator::restore(const Assignment& assignment) {
  for (const auto& [op, cuts, candidate] : assignment) {
    if (candidate != nullptr) {
      choose(op, *candidate);
    } else {
      // A fix() made it (a seed of an unreached part): its cuts applied before, so again.
      (void)fix(op, cuts);
    }
  }
}

void Propagator::undecide(ir::OpId op) {
  shards_[op].reset();
  cuts_[op].clear();
  chosen_[op] = nullptr;
}

std::vector<std::vector<ir::OpId>> Propagator::heaviestComponents(ir::OpId anchor) {
  std::vector<ir::OpId> parent(graph_.ops().size());
  std::iota(parent.begin(), parent.end(), ir::OpId{0});
  auto root = [&](ir::OpId op) {
    while (parent[op] != op) op = parent[op] = parent[parent[op]];
    return op;
  };
  for (const ir::Op& node : graph_.ops()) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ir::Tensor& tensor = graph_.tensor(node.inputs[i]);
      if (tensor.producer == ir::kNoOp) continue;
      const auto source = decidedSourceLayout(tensor, node.id);
      const rules::ShardedOp& shard = *shards_[node.id];
      auto seconds = edges_.edgeSeconds(*source, shard.inputs[i], shard.inputGradPartialAxes[i],
                                        ir::dtypeBytes(tensor.type.dtype), tensor.hasGradient());
      if (seconds && *seconds == 0) parent[root(node.id)] = root(tensor.producer);
    }
  }
  std::map<ir::OpId, std::vector<ir::OpId>> byRoot;
  for (const ir::Op& op : graph_.ops()) byRoot[root(op.id)].push_back(op.id);
  std::vector<std::pair<double, std::vector<ir::OpId>>> weighed;
  for (auto& [top, ops] : byRoot) {
    if (ops.size() < 2 || root(anchor) == top) continue;
    double flops = 0;
    for (ir::OpId op : ops) flops += graph_.forwardFlops(graph_.op(op));
    weighed.emplace_back(flops, std::move(ops));
  }
  std::stable_sort(weighed.begin(), weighed.end(), [](const auto& a, const auto& b) {
    return std::tie(b.first, a.second.front()) < std::tie(a.first, b.second.front());
  });
  std::vector<std::vector<ir::OpId>> components;
  for (auto& [flops, ops] : weighed) {
    if (components.size() == kComponentMoves) break;
    components.push_back(std::move(ops));
  }
  return components;
}

}  // namespace autopar::search::detail
