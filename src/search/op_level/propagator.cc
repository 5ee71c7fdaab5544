#include "search/op_level/propagator.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "layout/strategy.h"

namespace autopar::search::detail {

namespace {

/// How many shape-keeping ops a candidate's layout is carried through to price the decided ops
/// beyond them (Propagator::collectAhead).
constexpr int kLookaheadDepth = 4;

}  // namespace

Status Propagator::fix(ir::OpId op, const rules::FactorCuts& cuts) {
  auto shard = rules::applyFactorCuts(table_.rule(op), cuts, ranks_);
  if (!shard) return shard.error().in(fmt::format("op '{}'", graph_.op(op).name));
  shards_[op] = std::move(*shard);
  cuts_[op] = cuts;
  chosen_[op] = nullptr;
  return {};
}

Status Propagator::spread(PropagationResult& result) {
  for (const ir::Op& op : graph_.ops()) {
    if (shards_[op.id]) enqueueNeighbours(op.id);
  }
  while (true) {
    while (!frontier_.empty()) {
      const auto [bytes, negativeId, via] = frontier_.top();
      frontier_.pop();
      const auto op = static_cast<ir::OpId>(-negativeId);
      if (shards_[op]) continue;
      if (auto status = decideBest(op, via, result); !status) return status;
      enqueueNeighbours(op);
    }
    const std::optional<ir::OpId> seed = heaviestUndecided();
    if (!seed) return {};
    // A part of the graph no fixed op reaches starts data parallel at its heaviest op.
    if (auto status = fix(*seed, rules::defaultFactorCuts(table_.rule(*seed), numDevices()));
        !status) {
      return status;
    }
    result.log.push_back(fmt::format("{}: {} (default: no decided neighbour)",
                                     graph_.op(*seed).name, strategyText(*seed)));
    enqueueNeighbours(*seed);
  }
}

Status Propagator::collectConflicts(const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                    PropagationResult& result) {
  for (const ir::Tensor& tensor : graph_.tensors()) {
    std::vector<std::pair<ir::OpId, size_t>> fixedUses;
    for (ir::OpId consumer : tensor.consumers) {
      if (!fixed.contains(consumer)) continue;
      const ir::Op& op = graph_.op(consumer);
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (op.inputs[i] == tensor.id) fixedUses.emplace_back(consumer, i);
      }
    }
    if (tensor.isParameter()) {
      if (!options_.sharedParameterConflictIsError) continue;
      if (auto status = checkSharedParameter(tensor, fixedUses); !status) return status;
      continue;
    }
    if (tensor.producer == ir::kNoOp || !fixed.contains(tensor.producer)) continue;
    for (const auto& [consumer, index] : fixedUses) {
      auto status = recordConflict(tensor, consumer, index, result);
      if (!status) return status;
    }
  }
  return {};
}

void Propagator::choose(ir::OpId op, CandidateTable::Candidate& candidate) {
  cuts_[op] = candidate.cuts;
  shards_[op] = candidate.shard;
  chosen_[op] = &candidate;
}

Expected<double> Propagator::objectiveSeconds() {
  std::vector<rules::ShardedOp> shards;
  std::vector<double> nodeSeconds;
  shards.reserve(shards_.size());
  for (const ir::Op& op : graph_.ops()) {
    shards.push_back(*shards_[op.id]);
    auto seconds = nodeSecondsOf(op, shards.back(), chosen_[op.id]);
    if (!seconds) return seconds;
    nodeSeconds.push_back(*seconds);
  }
  return assignmentSeconds(graph_, shards, cluster_, table_.deviceConstants(), edges_, &nodeSeconds,
                           options_.copies);
}

std::string Propagator::strategyText(ir::OpId op) const {
  return layout::strategyToString(rules::strategyFromFactorCuts(table_.rule(op), cuts_[op]));
}

void Propagator::enqueueNeighbours(ir::OpId op) {
  forEachNeighbour(graph_.op(op), [&](ir::OpId neighbour, const ir::Tensor& tensor) {
    if (neighbour == op || shards_[neighbour]) return;
    frontier_.emplace(tensor.type.bytes(), -static_cast<int64_t>(neighbour), op);
  });
}

std::optional<ir::OpId> Propagator::heaviestUndecided() const {
  std::optional<ir::OpId> best;
  double bestFlops = -1;
  for (const ir::Op& op : graph_.ops()) {
    if (shards_[op.id]) continue;
    const double flops = graph_.forwardFlops(op);
    if (flops > bestFlops) {
      bestFlops = flops;
      best = op.id;
    }
  }
  return best;
}

Expected<double> Propagator::edgeSeconds(ir::OpId op, const rules::ShardedOp& candidate) {
  const ir::Op& node = graph_.op(op);
  double total = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ir::Tensor& tensor = graph_.tensor(node.inputs[i]);
    const auto source = decidedSourceLayout(tensor, op);
    if (!source) continue;
    auto seconds =
        edges_.edgeSeconds(source->layout, candidate.inputs[i], candidate.inputGradPartialAxes[i],
                           ir::dtypeBytes(tensor.type.dtype), tensor.hasGradient());
    if (!seconds) return seconds;
    total += *seconds * options_.copies.ofEdge(op, source->op);
  }
  for (size_t j = 0; j < node.outputs.size(); ++j) {
    const ir::Tensor& tensor = graph_.tensor(node.outputs[j]);
    for (ir::OpId consumerId : tensor.consumers) {
      if (!shards_[consumerId]) continue;
      const ir::Op& consumer = graph_.op(consumerId);
      const rules::ShardedOp& shard = *shards_[consumerId];
      for (size_t k = 0; k < consumer.inputs.size(); ++k) {
        if (consumer.inputs[k] != tensor.id) continue;
        auto seconds =
            edges_.edgeSeconds(candidate.outputs[j], shard.inputs[k], shard.inputGradPartialAxes[k],
                               ir::dtypeBytes(tensor.type.dtype), tensor.hasGradient());
        if (!seconds) return seconds;
        total += *seconds * options_.copies.ofEdge(op, consumerId);
      }
    }
  }
  return total;
}

void Propagator::collectAhead(const ir::Tensor& tensor, int depth, uint32_t blocked,
                              std::vector<AheadPoint>& points,
                              std::set<std::pair<ir::TensorId, uint32_t>>& walked) const {
  // Each tensor once per mask: an op reading a tensor twice, or two paths meeting again (a
  // diamond), carry one layout change, not one per path.
  if (depth == 0 || !walked.emplace(tensor.id, blocked).second) return;
  const int64_t elementBytes = ir::dtypeBytes(tensor.type.dtype);
  for (ir::OpId consumerId : uniqueConsumers(tensor)) {
    if (shards_[consumerId]) continue;  // a decided neighbour: edgeSeconds prices it
    const ir::Op& consumer = graph_.op(consumerId);
    uint32_t reaching = blocked;
    for (size_t i = 0; i < consumer.inputs.size(); ++i) {
      if (consumer.inputs[i] == tensor.id) reaching |= unsplittableDims(consumerId, i);
    }
    if (reaching != blocked) {
      addPoint(AheadPoint{nullptr, nullptr, blocked, reaching & ~blocked, elementBytes,
                          tensor.hasGradient()},
               points);
    }
    for (ir::TensorId output : consumer.outputs) {
      const ir::Tensor& next = graph_.tensor(output);
      if (next.type.shape != tensor.type.shape) continue;
      for (ir::OpId endId : uniqueConsumers(next)) {
        if (!shards_[endId]) continue;
        const ir::Op& end = graph_.op(endId);
        for (size_t k = 0; k < end.inputs.size(); ++k) {
          if (end.inputs[k] != next.id) continue;
          addPoint(AheadPoint{&shards_[endId]->inputs[k], &shards_[endId]->inputGradPartialAxes[k],
                              reaching, 0, ir::dtypeBytes(next.type.dtype), next.hasGradient()},
                   points);
        }
      }
      collectAhead(next, depth - 1, reaching, points, walked);
    }
  }
}

std::vector<ir::OpId> Propagator::uniqueConsumers(const ir::Tensor& tensor) {
  std::vector<ir::OpId> consumers = tensor.consumers;
  std::sort(consumers.begin(), consumers.end());
  consumers.erase(std::unique(consumers.begin(), consumers.end()), consumers.end());
  return consumers;
}

uint32_t Propagator::unsplittableDims(ir::OpId op, size_t index) const {
  uint32_t mask = 0;
  const rules::ShardingRule& rule = table_.rule(op);
  if (index >= rule.operands.size()) return mask;
  for (size_t d = 0; d < rule.operands[index].size() && d < 32; ++d) {
    for (const auto& part : rule.operands[index][d]) {
      if (rule.factors[static_cast<size_t>(part.factor)].kind ==
          rules::FactorKind::kNeedReplication) {
        mask |= 1U << d;
      }
    }
  }
  return mask;
}

void Propagator::addPoint(const AheadPoint& found, std::vector<AheadPoint>& points) {
  for (AheadPoint& other : points) {
    if (other.sameAs(found)) {
      ++other.count;
      return;
    }
  }
  points.push_back(found);
}

layout::TensorLayout Propagator::gathered(const layout::TensorLayout& layout, uint32_t mask) {
  layout::TensorLayout result = layout;
  for (size_t d = 0; d < result.dimAxes.size() && d < 32; ++d) {
    if ((mask >> d) & 1U) result.dimAxes[d].clear();
  }
  return result;
}

Expected<double> Propagator::secondsAhead(const std::vector<AheadPoint>& points,
                                          const layout::TensorLayout& layout) {
  static const std::vector<int> kNoPartial;
  double total = 0;
  for (const AheadPoint& point : points) {
    const layout::TensorLayout arriving = gathered(layout, point.blocked);
    auto seconds = point.consumed != nullptr
                       ? edges_.edgeSeconds(arriving, *point.consumed, *point.gradPartialAxes,
                                            point.elementBytes, point.hasGradient)
                       : edges_.edgeSeconds(arriving, gathered(arriving, point.gathers), kNoPartial,
                                            point.elementBytes, point.hasGradient);
    if (!seconds) return seconds;
    total += *seconds * point.count;
  }
  return total;
}

std::optional<Propagator::SourceLayout> Propagator::decidedSourceLayout(const ir::Tensor& tensor,
                                                                        ir::OpId self) const {
  if (tensor.producer != ir::kNoOp) {
    if (!shards_[tensor.producer]) return std::nullopt;
    const ir::Op& producer = graph_.op(tensor.producer);
    for (size_t j = 0; j < producer.outputs.size(); ++j) {
      if (producer.outputs[j] == tensor.id) {
        return SourceLayout{shards_[tensor.producer]->outputs[j], tensor.producer};
      }
    }
    return std::nullopt;
  }
  for (ir::OpId consumer : tensor.consumers) {
    if (consumer == self || !shards_[consumer]) continue;
    const ir::Op& op = graph_.op(consumer);
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      if (op.inputs[k] == tensor.id) {
        return SourceLayout{shards_[consumer]->inputs[k].withoutPartial(), consumer};
      }
    }
  }
  return std::nullopt;
}

Expected<double> Propagator::nodeSecondsOf(const ir::Op& op, const rules::ShardedOp& shard,
                                           CandidateTable::Candidate* candidate) {
  if (candidate != nullptr) {
    auto seconds = table_.nodeSeconds(op.id, *candidate);
    if (!seconds) return seconds.error().in(fmt::format("op '{}'", op.name));
    return seconds;
  }
  auto cost = nodeCost(graph_, op, shard, cluster_, table_.deviceConstants(), edges_);
  if (!cost) return cost.error().in(fmt::format("op '{}'", op.name));
  return cost->seconds;
}

Expected<double> Propagator::localSeconds(const ir::Op& node, const rules::ShardedOp& shard,
                                          CandidateTable::Candidate* candidate) {
  auto own = nodeSecondsOf(node, shard, candidate);
  if (!own) return own;
  auto edge = edgeSeconds(node.id, shard);
  if (!edge) return edge;
  return *own * options_.copies.of(node.id) + *edge;
}

Status Propagator::decideBest(ir::OpId op, ir::OpId via, PropagationResult& result) {
  using Key = std::pair<double, double>;
  CandidateTable::Candidate* best = nullptr;
  Key bestKey;
  double bestEdge = 0;
  double bestAhead = 0;
  const ir::Op& node = graph_.op(op);
  std::vector<std::vector<AheadPoint>> ahead(node.outputs.size());
  for (size_t j = 0; j < node.outputs.size(); ++j) {
    std::set<std::pair<ir::TensorId, uint32_t>> walked;
    collectAhead(graph_.tensor(node.outputs[j]), kLookaheadDepth, 0, ahead[j], walked);
  }
  auto candidates = table_.candidates(op);
  if (!candidates) return candidates.error().in(fmt::format("op '{}'", node.name));
  for (CandidateTable::Candidate& candidate : **candidates) {
    auto edge = edgeSeconds(op, candidate.shard);
    if (!edge) return edge.error().in(fmt::format("op '{}'", node.name));
    double aheadSeconds = 0;
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      auto seconds = secondsAhead(ahead[j], candidate.shard.outputs[j]);
      if (!seconds) return seconds.error().in(fmt::format("op '{}'", node.name));
      aheadSeconds += *seconds;
    }
    double sync = 0;
    if (options_.priceParameterSync) {
      auto seconds = table_.syncSeconds(op, candidate);
      if (!seconds) return seconds.error().in(fmt::format("op '{}'", node.name));
      sync = *seconds;
    }
    // The chains ahead lie mostly within the op's own layer: they count as often as it does.
    const Key key{*edge + (aheadSeconds + sync) * options_.copies.of(op), candidate.computeSeconds};
    if (best == nullptr || key < bestKey || (key == bestKey && candidate.cuts < best->cuts)) {
      best = &candidate;
      bestKey = key;
      bestEdge = *edge;
      bestAhead = aheadSeconds;
    }
  }
  if (best == nullptr) {
    return Error{
        fmt::format("op '{}': no strategy fits {} devices", graph_.op(op).name, numDevices())};
  }
  choose(op, *best);
  const std::string aheadText =
      bestAhead > 0 ? fmt::format(", {} ahead", formatSeconds(bestAhead)) : "";
  result.log.push_back(fmt::format("{}: {} chosen (edge cost {}{}, compute {}; from '{}')",
                                   graph_.op(op).name, strategyText(op), formatSeconds(bestEdge),
                                   aheadText, formatSeconds(bestKey.second), graph_.op(via).name));
  return {};
}

Status Propagator::checkSharedParameter(const ir::Tensor& tensor,
                                        const std::vector<std::pair<ir::OpId, size_t>>& fixedUses) {
  for (size_t u = 1; u < fixedUses.size(); ++u) {
    const auto& [firstOp, firstIndex] = fixedUses.front();
    const auto& [otherOp, otherIndex] = fixedUses[u];
    const auto& first = shards_[firstOp]->inputs[firstIndex];
    const auto& other = shards_[otherOp]->inputs[otherIndex];
    auto plan = layout::redistribute(first, other, cluster_, ir::dtypeBytes(tensor.type.dtype));
    if (!plan) return plan.error();
    if (plan->empty()) continue;
    return Error{fmt::format(
        "parameter '{}' is shared by '{}' {} and '{}' {}, whose annotations store it in "
        "different layouts ({} vs {}); annotate both alike or leave one to propagation",
        tensor.name, graph_.op(firstOp).name, strategyText(firstOp), graph_.op(otherOp).name,
        strategyText(otherOp), first.toString(), other.toString())};
  }
  return {};
}

Status Propagator::recordConflict(const ir::Tensor& tensor, ir::OpId consumer, size_t index,
                                  PropagationResult& result) {
  const auto source = decidedSourceLayout(tensor, consumer);
  const auto& target = shards_[consumer]->inputs[index];
  auto plan =
      layout::redistribute(source->layout, target, cluster_, ir::dtypeBytes(tensor.type.dtype));
  if (!plan) return plan.error();
  if (plan->empty()) return {};
  std::vector<std::string> steps;
  for (const auto& step : plan->steps) steps.push_back(step.toString());
  result.conflicts.push_back(Conflict{
      tensor.id, tensor.producer, consumer,
      fmt::format("tensor '{}' between '{}' {} and '{}' {}: inserted {}", tensor.name,
                  graph_.op(tensor.producer).name, strategyText(tensor.producer),
                  graph_.op(consumer).name, strategyText(consumer), fmt::join(steps, "; "))});
  return {};
}

}  // namespace autopar::search::detail
