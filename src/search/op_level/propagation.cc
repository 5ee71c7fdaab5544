#include "search/op_level/propagation.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <queue>
#include <set>
#include <tuple>

#include "cost/op_cost.h"
#include "layout/strategy.h"
#include "search/op_level/edge_cost.h"

namespace autopar::search {

namespace {

std::string formatSeconds(double seconds) { return fmt::format("{:.3g} s", seconds); }

/// How many shape-keeping ops a candidate's layout is carried through to price the decided ops
/// beyond them (Propagator::collectAhead).
constexpr int kLookaheadDepth = 4;

class Propagator {
 public:
  Propagator(const ir::Graph& graph, const std::vector<int>& ranks, const cluster::Cluster& cluster,
             const PropagationOptions& options)
      : graph_(graph),
        ranks_(ranks),
        cluster_(cluster),
        options_(options),
        edges_(cluster, layout::RedistributionOptions{options.enableAllToAll}) {}

  Status loadRules() {
    for (const ir::Op& op : graph_.ops()) {
      auto rule = rules::shardingRuleFor(graph_, op);
      if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
      rules_.push_back(std::move(*rule));
    }
    shards_.resize(graph_.ops().size());
    cuts_.resize(graph_.ops().size());
    return {};
  }

  Status fix(ir::OpId op, const rules::FactorCuts& cuts) {
    auto shard = rules::applyFactorCuts(rules_[op], cuts, ranks_);
    if (!shard) return shard.error().in(fmt::format("op '{}'", graph_.op(op).name));
    shards_[op] = std::move(*shard);
    cuts_[op] = cuts;
    return {};
  }

  /// Decides every op reachable from the decided ones, largest connecting tensor first.
  Status spread(PropagationResult& result) {
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
      if (auto status = fix(*seed, rules::defaultFactorCuts(rules_[*seed], numDevices()));
          !status) {
        return status;
      }
      result.log.push_back(fmt::format("{}: {} (default: no decided neighbour)",
                                       graph_.op(*seed).name, strategyText(*seed)));
      enqueueNeighbours(*seed);
    }
  }

  /// Conflicts between fixed ops: a redistribution on an edge both of whose ends were fixed.
  Status collectConflicts(const std::map<ir::OpId, rules::FactorCuts>& fixed,
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

  std::vector<rules::FactorCuts> cuts() const { return cuts_; }

 private:
  int64_t numDevices() const { return static_cast<int64_t>(ranks_.size()); }

  std::string strategyText(ir::OpId op) const {
    return layout::strategyToString(rules::strategyFromFactorCuts(rules_[op], cuts_[op]));
  }

  void enqueueNeighbours(ir::OpId op) {
    const ir::Op& node = graph_.op(op);
    auto push = [&](ir::OpId neighbour, const ir::Tensor& tensor) {
      if (neighbour == op || shards_[neighbour]) return;
      frontier_.emplace(tensor.type.bytes(), -static_cast<int64_t>(neighbour), op);
    };
    for (ir::TensorId id : node.inputs) {
      const ir::Tensor& tensor = graph_.tensor(id);
      if (tensor.producer != ir::kNoOp) push(tensor.producer, tensor);
      if (tensor.producer == ir::kNoOp) {
        for (ir::OpId consumer : tensor.consumers) push(consumer, tensor);
      }
    }
    for (ir::TensorId id : node.outputs) {
      const ir::Tensor& tensor = graph_.tensor(id);
      for (ir::OpId consumer : tensor.consumers) push(consumer, tensor);
    }
  }

  std::optional<ir::OpId> heaviestUndecided() const {
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

  /// Redistribution seconds between `candidate` for `op` and every decided neighbour.
  Expected<double> edgeSeconds(ir::OpId op, const rules::ShardedOp& candidate) {
    const ir::Op& node = graph_.op(op);
    double total = 0;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ir::Tensor& tensor = graph_.tensor(node.inputs[i]);
      const auto source = decidedSourceLayout(tensor, op);
      if (!source) continue;
      auto seconds =
          edges_.edgeSeconds(*source, candidate.inputs[i], candidate.inputGradPartialAxes[i],
                             ir::dtypeBytes(tensor.type.dtype), tensor.hasGradient());
      if (!seconds) return seconds;
      total += *seconds;
    }
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      const ir::Tensor& tensor = graph_.tensor(node.outputs[j]);
      for (ir::OpId consumerId : tensor.consumers) {
        if (!shards_[consumerId]) continue;
        const ir::Op& consumer = graph_.op(consumerId);
        const rules::ShardedOp& shard = *shards_[consumerId];
        for (size_t k = 0; k < consumer.inputs.size(); ++k) {
          if (consumer.inputs[k] != tensor.id) continue;
          auto seconds = edges_.edgeSeconds(
              candidate.outputs[j], shard.inputs[k], shard.inputGradPartialAxes[k],
              ir::dtypeBytes(tensor.type.dtype), tensor.hasGradient());
          if (!seconds) return seconds;
          total += *seconds;
        }
      }
    }
    return total;
  }

  /// Where chains of undecided ops that keep a tensor's shape (adds, norms, activations) meet
  /// decided ops: the decided op's input (`consumed`), or an undecided op on the way that cannot
  /// split some dims the chain carries (a norm's normalised dim) and so gathers them (`consumed`
  /// null). `blocked` and `gathers` are bitmasks of the tensor's dims: the dims gathered before
  /// this point, and those gathered here. Equal points are merged (`count`).
  struct AheadPoint {
    const layout::TensorLayout* consumed = nullptr;
    const std::vector<int>* gradPartialAxes = nullptr;
    uint32_t blocked = 0;
    uint32_t gathers = 0;
    int64_t elementBytes = 0;
    bool hasGradient = false;
    int count = 1;

    [[nodiscard]] bool sameAs(const AheadPoint& other) const {
      const bool sameConsumed = consumed == nullptr
                                    ? other.consumed == nullptr
                                    : other.consumed != nullptr && *consumed == *other.consumed &&
                                          *gradPartialAxes == *other.gradPartialAxes;
      return sameConsumed && blocked == other.blocked && gathers == other.gathers &&
             elementBytes == other.elementBytes && hasGradient == other.hasGradient;
    }
  };

  /// The points down chains from `tensor`, up to `depth` ops. Priced against a candidate's layout
  /// by secondsAhead: without them an op between two decided ones sees only the side reached
  /// first, and may pick a layout (a reduce-scatter of partial sums) that the other side must
  /// gather again, where one all-reduce would do.
  void collectAhead(const ir::Tensor& tensor, int depth, uint32_t blocked,
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
            addPoint(
                AheadPoint{&shards_[endId]->inputs[k], &shards_[endId]->inputGradPartialAxes[k],
                           reaching, 0, ir::dtypeBytes(next.type.dtype), next.hasGradient()},
                points);
          }
        }
        collectAhead(next, depth - 1, reaching, points, walked);
      }
    }
  }

  /// A tensor's consumers, each once (an op reading the tensor twice is listed twice).
  static std::vector<ir::OpId> uniqueConsumers(const ir::Tensor& tensor) {
    std::vector<ir::OpId> consumers = tensor.consumers;
    std::sort(consumers.begin(), consumers.end());
    consumers.erase(std::unique(consumers.begin(), consumers.end()), consumers.end());
    return consumers;
  }

  /// The dims of `op`'s input `index` that its rule cannot split (kNeedReplication), as a mask.
  uint32_t unsplittableDims(ir::OpId op, size_t index) const {
    uint32_t mask = 0;
    const rules::ShardingRule& rule = rules_[op];
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

  static void addPoint(const AheadPoint& found, std::vector<AheadPoint>& points) {
    for (AheadPoint& other : points) {
      if (other.sameAs(found)) {
        ++other.count;
        return;
      }
    }
    points.push_back(found);
  }

  /// `layout` with the dims in `mask` whole.
  static layout::TensorLayout gathered(const layout::TensorLayout& layout, uint32_t mask) {
    layout::TensorLayout result = layout;
    for (size_t d = 0; d < result.dimAxes.size() && d < 32; ++d) {
      if ((mask >> d) & 1U) result.dimAxes[d].clear();
    }
    return result;
  }

  /// What carrying `layout` down the chains costs: at each point, the redistribution into the
  /// decided op's input, or the gather of the dims an undecided op cannot split.
  Expected<double> secondsAhead(const std::vector<AheadPoint>& points,
                                const layout::TensorLayout& layout) {
    static const std::vector<int> kNoPartial;
    double total = 0;
    for (const AheadPoint& point : points) {
      const layout::TensorLayout arriving = gathered(layout, point.blocked);
      auto seconds = point.consumed != nullptr
                         ? edges_.edgeSeconds(arriving, *point.consumed, *point.gradPartialAxes,
                                              point.elementBytes, point.hasGradient)
                         : edges_.edgeSeconds(arriving, gathered(arriving, point.gathers),
                                              kNoPartial, point.elementBytes, point.hasGradient);
      if (!seconds) return seconds;
      total += *seconds * point.count;
    }
    return total;
  }

  /// The decided layout a tensor arrives in: its producer's output, or for a parameter or input
  /// the layout of its first decided consumer other than `self` (the storage layout).
  std::optional<layout::TensorLayout> decidedSourceLayout(const ir::Tensor& tensor,
                                                          ir::OpId self) const {
    if (tensor.producer != ir::kNoOp) {
      if (!shards_[tensor.producer]) return std::nullopt;
      const ir::Op& producer = graph_.op(tensor.producer);
      for (size_t j = 0; j < producer.outputs.size(); ++j) {
        if (producer.outputs[j] == tensor.id) return shards_[tensor.producer]->outputs[j];
      }
      return std::nullopt;
    }
    for (ir::OpId consumer : tensor.consumers) {
      if (consumer == self || !shards_[consumer]) continue;
      const ir::Op& op = graph_.op(consumer);
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        if (op.inputs[k] == tensor.id) return shards_[consumer]->inputs[k].withoutPartial();
      }
    }
    return std::nullopt;
  }

  /// Least redistribution (to decided neighbours, and ahead to the decided ops beyond chains of
  /// undecided ones), then least compute, then the lexicographically smallest cuts.
  Status decideBest(ir::OpId op, ir::OpId via, PropagationResult& result) {
    using Key = std::tuple<double, double, rules::FactorCuts>;
    std::optional<Key> best;
    std::optional<rules::ShardedOp> bestShard;
    double bestEdge = 0;
    double bestAhead = 0;
    const ir::Op& node = graph_.op(op);
    std::vector<std::vector<AheadPoint>> ahead(node.outputs.size());
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      std::set<std::pair<ir::TensorId, uint32_t>> walked;
      collectAhead(graph_.tensor(node.outputs[j]), kLookaheadDepth, 0, ahead[j], walked);
    }
    for (const auto& cuts : rules::fullDeviceCuts(rules_[op], numDevices())) {
      auto shard = rules::applyFactorCuts(rules_[op], cuts, ranks_);
      if (!shard) continue;
      auto edge = edgeSeconds(op, *shard);
      if (!edge) return edge.error().in(fmt::format("op '{}'", graph_.op(op).name));
      double aheadSeconds = 0;
      for (size_t j = 0; j < node.outputs.size(); ++j) {
        auto seconds = secondsAhead(ahead[j], shard->outputs[j]);
        if (!seconds) return seconds.error().in(fmt::format("op '{}'", node.name));
        aheadSeconds += *seconds;
      }
      Key key{*edge + aheadSeconds, cost::costOfOp(graph_, node, *shard, cluster_).totalSeconds(),
              cuts};
      if (!best || key < *best) {
        best = std::move(key);
        bestShard = std::move(*shard);
        bestEdge = *edge;
        bestAhead = aheadSeconds;
      }
    }
    if (!best) {
      return Error{
          fmt::format("op '{}': no strategy fits {} devices", graph_.op(op).name, numDevices())};
    }
    cuts_[op] = std::get<2>(*best);
    shards_[op] = std::move(bestShard);
    const std::string aheadText =
        bestAhead > 0 ? fmt::format(", {} ahead", formatSeconds(bestAhead)) : "";
    result.log.push_back(fmt::format("{}: {} chosen (edge cost {}{}, compute {}; from '{}')",
                                     graph_.op(op).name, strategyText(op), formatSeconds(bestEdge),
                                     aheadText, formatSeconds(std::get<1>(*best)),
                                     graph_.op(via).name));
    return {};
  }

  Status checkSharedParameter(const ir::Tensor& tensor,
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

  Status recordConflict(const ir::Tensor& tensor, ir::OpId consumer, size_t index,
                        PropagationResult& result) {
    const auto source = decidedSourceLayout(tensor, consumer);
    const auto& target = shards_[consumer]->inputs[index];
    auto plan = layout::redistribute(*source, target, cluster_, ir::dtypeBytes(tensor.type.dtype));
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

  const ir::Graph& graph_;
  const std::vector<int>& ranks_;
  const cluster::Cluster& cluster_;
  PropagationOptions options_;
  EdgeCostCache edges_;
  std::vector<rules::ShardingRule> rules_;
  std::vector<std::optional<rules::ShardedOp>> shards_;
  std::vector<rules::FactorCuts> cuts_;
  /// (connecting tensor bytes, -op id, decided neighbour): largest first, then lowest id.
  std::priority_queue<std::tuple<int64_t, int64_t, ir::OpId>> frontier_;
};

}  // namespace

Expected<PropagationResult> propagateStrategies(const ir::Graph& graph,
                                                const std::vector<int>& ranks,
                                                const cluster::Cluster& cluster,
                                                const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                                const PropagationOptions& options) {
  Propagator propagator(graph, ranks, cluster, options);
  if (auto status = propagator.loadRules(); !status) return status.error();
  PropagationResult result;
  if (fixed.empty()) {
    // Nothing to spread: every op runs data parallel, as MindSpore does without annotations.
    for (const ir::Op& op : graph.ops()) {
      auto rule = rules::shardingRuleFor(graph, op);
      if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
      result.cuts.push_back(rules::defaultFactorCuts(*rule, static_cast<int64_t>(ranks.size())));
    }
    result.log.push_back("no annotated op: every op takes its data-parallel default");
    return result;
  }
  for (const auto& [op, cuts] : fixed) {
    if (auto status = propagator.fix(op, cuts); !status) return status.error();
  }
  if (auto status = propagator.spread(result); !status) return status.error();
  if (auto status = propagator.collectConflicts(fixed, result); !status) return status.error();
  result.cuts = propagator.cuts();
  return result;
}

}  // namespace autopar::search
