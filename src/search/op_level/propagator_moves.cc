// The Propagator's local moves on a full assignment: coordinate descent one op at a time
// (refine), and larger neighbourhoods spread again: whole components (respreadComponents) and
// the ops around one role of every repeated block (respreadRoles).

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

#include "layout/strategy.h"
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
/// Propagator::respreadRoles: the heaviest roles moved, and how many neighbour steps around
/// each member are spread again.
constexpr size_t kRoleMoves = 4;
constexpr int kRoleRadius = 2;

/// The `count` groups of ops with the most forward FLOPs, each op counted as often as it stands
/// for, heaviest first (on a tie, the lower first op).
std::vector<std::vector<ir::OpId>> heaviestGroups(const ir::Graph& graph, const OpCopies& copies,
                                                  std::vector<std::vector<ir::OpId>> groups,
                                                  size_t count) {
  std::vector<std::pair<double, size_t>> weighed;
  for (size_t g = 0; g < groups.size(); ++g) {
    double flops = 0;
    for (ir::OpId op : groups[g]) flops += graph.forwardFlops(graph.op(op)) * copies.of(op);
    weighed.emplace_back(flops, g);
  }
  std::stable_sort(weighed.begin(), weighed.end(), [&](const auto& a, const auto& b) {
    return std::tie(b.first, groups[a.second].front()) <
           std::tie(a.first, groups[b.second].front());
  });
  std::vector<std::vector<ir::OpId>> heaviest;
  for (const auto& [flops, g] : weighed) {
    if (heaviest.size() == count) break;
    heaviest.push_back(std::move(groups[g]));
  }
  return heaviest;
}

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
  bool moved = false;
  for (const std::vector<ir::OpId>& component : heaviestComponents(anchor)) {
    const ir::OpId heaviest =
        *std::max_element(component.begin(), component.end(), [&](ir::OpId a, ir::OpId b) {
          return graph_.forwardFlops(graph_.op(a)) < graph_.forwardFlops(graph_.op(b));
        });
    auto starts = table_.leastNodeCost(heaviest, kComponentStarts, chosen_[heaviest]);
    if (!starts) return starts.error();
    auto better = respread(component, *starts, [&](CandidateTable::Candidate* start) {
      choose(heaviest, *start);
      return Expected<bool>(true);
    });
    if (!better) return better.error();
    if (*better == nullptr) continue;
    moved = true;
    result.log.push_back(
        fmt::format("{} ops joined without redistribution spread again from '{}' {}",
                    component.size(), graph_.op(heaviest).name, strategyText(heaviest)));
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
      auto seconds =
          edges_.edgeSeconds(source->layout, shard.inputs[i], shard.inputGradPartialAxes[i],
                             ir::dtypeBytes(tensor.type.dtype), tensor.hasGradient());
      if (seconds && *seconds == 0) parent[root(node.id)] = root(tensor.producer);
    }
  }
  std::map<ir::OpId, std::vector<ir::OpId>> byRoot;
  for (const ir::Op& op : graph_.ops()) byRoot[root(op.id)].push_back(op.id);
  std::vector<std::vector<ir::OpId>> components;
  for (auto& [top, ops] : byRoot) {
    if (ops.size() >= 2 && root(anchor) != top) components.push_back(std::move(ops));
  }
  return heaviestGroups(graph_, options_.copies, std::move(components), kComponentMoves);
}

std::vector<std::vector<ir::OpId>> Propagator::heaviestRoles(ir::OpId anchor) const {
  // A repeated block is one whose tag ends in ".<number>"; its kind is the tag before that.
  std::map<std::pair<std::string, size_t>, std::vector<ir::OpId>> roles;
  std::map<std::string, size_t> seen;  // ops met so far per block tag
  for (const ir::Op& op : graph_.ops()) {
    const size_t dot = op.block.rfind('.');
    if (dot == std::string::npos || dot + 1 == op.block.size() ||
        op.block.find_first_not_of("0123456789", dot + 1) != std::string::npos) {
      continue;
    }
    roles[{op.block.substr(0, dot), seen[op.block]++}].push_back(op.id);
  }
  std::vector<std::vector<ir::OpId>> groups;
  for (auto& [role, ops] : roles) {
    if (std::find(ops.begin(), ops.end(), anchor) == ops.end()) groups.push_back(std::move(ops));
  }
  return heaviestGroups(graph_, options_.copies, std::move(groups), kRoleMoves);
}

std::vector<ir::OpId> Propagator::region(const std::vector<ir::OpId>& ops, int radius,
                                         ir::OpId anchor) const {
  std::vector<bool> in(graph_.ops().size(), false);
  std::vector<ir::OpId> frontier = ops;
  for (ir::OpId op : ops) in[op] = true;
  for (int step = 0; step < radius; ++step) {
    std::vector<ir::OpId> next;
    for (ir::OpId op : frontier) {
      forEachNeighbour(graph_.op(op), [&](ir::OpId neighbour, const ir::Tensor&) {
        if (in[neighbour] || neighbour == anchor) return;
        in[neighbour] = true;
        next.push_back(neighbour);
      });
    }
    frontier = std::move(next);
  }
  std::vector<ir::OpId> all;
  for (const ir::Op& op : graph_.ops()) {
    if (in[op.id]) all.push_back(op.id);
  }
  return all;
}

Expected<bool> Propagator::respreadRoles(ir::OpId anchor, PropagationResult& result) {
  bool moved = false;
  for (const std::vector<ir::OpId>& members : heaviestRoles(anchor)) {
    auto starts = table_.leastNodeCost(members.front(), kComponentStarts, chosen_[members.front()]);
    if (!starts) return starts.error();
    const std::vector<ir::OpId> around = region(members, kRoleRadius, anchor);
    auto better = respread(around, *starts, [&](CandidateTable::Candidate* start) {
      for (ir::OpId member : members) {
        // The members are alike, so each lists a strategy of the same cuts.
        auto candidates = table_.candidates(member);
        if (!candidates) return Expected<bool>(candidates.error());
        auto same = std::find_if((*candidates)->begin(), (*candidates)->end(),
                                 [&](const auto& c) { return c.cuts == start->cuts; });
        if (same == (*candidates)->end()) return Expected<bool>(false);
        choose(member, *same);
      }
      return Expected<bool>(true);
    });
    if (!better) return better.error();
    if (*better == nullptr) continue;
    moved = true;
    result.log.push_back(fmt::format("{} ops around the {} '{}'-like ops spread again from {}",
                                     around.size(), members.size(), graph_.op(members.front()).name,
                                     strategyText(members.front())));
  }
  return moved;
}

Expected<CandidateTable::Candidate*> Propagator::respread(
    const std::vector<ir::OpId>& ops, const std::vector<CandidateTable::Candidate*>& starts,
    const std::function<Expected<bool>(CandidateTable::Candidate*)>& seed) {
  std::vector<bool> in(graph_.ops().size(), false);
  for (ir::OpId op : ops) in[op] = true;
  auto before = regionSeconds(ops, in);
  if (!before) return before.error();
  const Assignment kept = assignmentOf(ops);
  double bestSeconds = *before * (1 - kRefineGain);
  CandidateTable::Candidate* bestStart = nullptr;
  std::optional<Assignment> best;
  for (CandidateTable::Candidate* start : starts) {
    for (ir::OpId op : ops) undecide(op);
    auto seeded = seed(start);
    if (!seeded) return seeded.error();
    if (*seeded) {
      PropagationResult scratch;
      if (auto status = spread(scratch); !status) return status.error();
      auto seconds = regionSeconds(ops, in);
      if (!seconds) return seconds.error();
      if (*seconds < bestSeconds) {
        bestSeconds = *seconds;
        bestStart = start;
        best = assignmentOf(ops);
      }
    }
    restore(kept);
  }
  if (best) restore(*best);
  return bestStart;
}

Expected<double> Propagator::regionSeconds(const std::vector<ir::OpId>& ops,
                                           const std::vector<bool>& in) {
  double total = 0;
  for (ir::OpId id : ops) {
    const ir::Op& op = graph_.op(id);
    auto node = nodeSecondsOf(op, *shards_[id], chosen_[id]);
    if (!node) return node;
    total += *node * options_.copies.of(id);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const ir::OpId producer = graph_.tensor(op.inputs[i]).producer;
      if (producer == ir::kNoOp) continue;
      auto seconds = inputEdgeSeconds(graph_, op, i, *shards_[producer], *shards_[id], edges_);
      if (!seconds) return seconds;
      total += *seconds * options_.copies.ofEdge(producer, id);
    }
    for (ir::TensorId output : op.outputs) {
      for (ir::OpId consumerId : uniqueConsumers(graph_.tensor(output))) {
        if (in[consumerId]) continue;  // counted with the consumer's inputs
        const ir::Op& consumer = graph_.op(consumerId);
        for (size_t k = 0; k < consumer.inputs.size(); ++k) {
          if (consumer.inputs[k] != output) continue;
          auto seconds =
              inputEdgeSeconds(graph_, consumer, k, *shards_[id], *shards_[consumerId], edges_);
          if (!seconds) return seconds;
          total += *seconds * options_.copies.ofEdge(id, consumerId);
        }
      }
    }
  }
  return total;
}

}  // namespace autopar::search::detail
