#include "search/op_level/propagation.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <queue>
#include <set>
#include <tuple>

#include "cost/op_cost.h"
#include "layout/strategy.h"
#include "search/op_level/edge_cost.h"
#include "search/op_level/objective.h"

namespace autopar::search {

namespace {

std::string formatSeconds(double seconds) { return fmt::format("{:.3g} s", seconds); }

/// How many shape-keeping ops a candidate's layout is carried through to price the decided ops
/// beyond them (Propagator::collectAhead).
constexpr int kLookaheadDepth = 4;
/// Coordinate-descent passes after an anchored spread (Propagator::refine), and the least
/// relative gain that moves an op: below it, float noise could swap two equal strategies.
constexpr int kRefinePasses = 4;
constexpr double kRefineGain = 1e-9;
/// Propagator::respreadComponents: the heaviest components moved, and the strategies of each
/// component's heaviest op it is spread again from (the least node cost ones).
constexpr size_t kComponentMoves = 4;
constexpr size_t kComponentStarts = 8;
/// An unannotated graph's anchor strategies whose spreads are refined (the least objective ones).
constexpr size_t kRefinedAnchors = 3;
/// The anchor strategies spread from: the least node cost ones (objective.h).
constexpr size_t kSpreadAnchors = 12;

/// Every op's sharding rule and, built when first asked for, its full-device strategies with
/// their compute and node costs: what the propagation runs of one search share (an unannotated
/// graph's anchor search propagates once per anchor strategy), with the edge-cost memo.
class CandidateTable {
 public:
  struct Candidate {
    rules::FactorCuts cuts;
    rules::ShardedOp shard;
    double computeSeconds = 0;          ///< cost::costOfOp
    std::optional<double> syncSeconds;  ///< objective.h's parameterSyncSeconds, when asked for
    std::optional<double> nodeSeconds;  ///< objective.h's node cost, when first asked for
  };

  CandidateTable(const ir::Graph& graph, const std::vector<int>& ranks,
                 const cluster::Cluster& cluster, const PropagationOptions& options)
      : graph_(graph),
        ranks_(ranks),
        cluster_(cluster),
        edges_(cluster, layout::RedistributionOptions{options.enableAllToAll}) {}

  Status loadRules() {
    for (const ir::Op& op : graph_.ops()) {
      auto rule = rules::shardingRuleFor(graph_, op);
      if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
      rules_.push_back(std::move(*rule));
    }
    candidates_.resize(rules_.size());
    return {};
  }

  [[nodiscard]] const rules::ShardingRule& rule(ir::OpId op) const { return rules_[op]; }
  EdgeCostCache& edges() { return edges_; }

  /// The op's full-device strategies that apply (rules::fullDeviceCuts order).
  Expected<std::vector<Candidate>*> candidates(ir::OpId op) {
    if (candidates_[op]) return &*candidates_[op];
    std::vector<Candidate> list;
    const ir::Op& node = graph_.op(op);
    for (auto& cuts : rules::fullDeviceCuts(rules_[op], static_cast<int64_t>(ranks_.size()))) {
      auto shard = rules::applyFactorCuts(rules_[op], cuts, ranks_);
      if (!shard) continue;
      const double compute = cost::costOfOp(graph_, node, *shard, cluster_).totalSeconds();
      list.push_back({std::move(cuts), std::move(*shard), compute, std::nullopt, std::nullopt});
    }
    return &candidates_[op].emplace(std::move(list));
  }

  Expected<double> syncSeconds(ir::OpId op, Candidate& candidate) {
    if (candidate.syncSeconds) return *candidate.syncSeconds;
    auto sync = parameterSyncSeconds(graph_, graph_.op(op), candidate.shard, edges_);
    if (!sync) return sync;
    candidate.syncSeconds = *sync;
    return *sync;
  }

  Expected<double> nodeSeconds(ir::OpId op, Candidate& candidate) {
    if (candidate.nodeSeconds) return *candidate.nodeSeconds;
    auto cost = nodeCost(graph_, graph_.op(op), candidate.shard, cluster_, edges_);
    if (!cost) return cost.error();
    candidate.nodeSeconds = cost->seconds;
    return cost->seconds;
  }

 private:
  const ir::Graph& graph_;
  const std::vector<int>& ranks_;
  const cluster::Cluster& cluster_;
  EdgeCostCache edges_;
  std::vector<rules::ShardingRule> rules_;
  std::vector<std::optional<std::vector<Candidate>>> candidates_;
};

class Propagator {
 public:
  Propagator(const ir::Graph& graph, const std::vector<int>& ranks, const cluster::Cluster& cluster,
             const PropagationOptions& options, CandidateTable& table)
      : graph_(graph),
        ranks_(ranks),
        cluster_(cluster),
        options_(options),
        table_(table),
        edges_(table.edges()),
        shards_(graph.ops().size()),
        cuts_(graph.ops().size()),
        chosen_(graph.ops().size(), nullptr) {}

  Status fix(ir::OpId op, const rules::FactorCuts& cuts) {
    auto shard = rules::applyFactorCuts(table_.rule(op), cuts, ranks_);
    if (!shard) return shard.error().in(fmt::format("op '{}'", graph_.op(op).name));
    shards_[op] = std::move(*shard);
    cuts_[op] = cuts;
    chosen_[op] = nullptr;
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
      if (auto status = fix(*seed, rules::defaultFactorCuts(table_.rule(*seed), numDevices()));
          !status) {
        return status;
      }
      result.log.push_back(fmt::format("{}: {} (default: no decided neighbour)",
                                       graph_.op(*seed).name, strategyText(*seed)));
      enqueueNeighbours(*seed);
    }
  }

  /// Coordinate descent once every op is decided: each op other than `anchor` chooses again,
  /// against all its neighbours, the strategy with the least node cost (objective.h) plus
  /// redistribution, and keeps it when that is lower than where it stands; passes repeat until
  /// none changes, at most kRefinePasses. Every change lowers the objective, so it ends.
  Status refine(ir::OpId anchor, PropagationResult& result) {
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

  /// A large-neighbourhood move once refine has converged. The ops joined by tensors that cross
  /// no redistribution form components; refine moves one op at a time, so it cannot move a
  /// component whose ops must change together (a residual stream from batch-and-sequence parts
  /// to batch alone, where every op half-way pays two redistributions). Each of the
  /// kComponentMoves heaviest components (forward FLOPs) that do not hold `anchor` is undecided
  /// and spread again from each of its heaviest op's kComponentStarts least node-cost strategies,
  /// the rest of the graph as it stands; the least objective is kept. Returns whether one moved.
  Expected<bool> respreadComponents(ir::OpId anchor, PropagationResult& result) {
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
      result.log.push_back(fmt::format(
          "{} ops joined without redistribution spread again from '{}' {}: objective {}",
          component.size(), graph_.op(heaviest).name, strategyText(heaviest),
          formatSeconds(*current)));
    }
    return moved;
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

  /// Decides `op` as one of its table candidates.
  void choose(ir::OpId op, CandidateTable::Candidate& candidate) {
    cuts_[op] = candidate.cuts;
    shards_[op] = candidate.shard;
    chosen_[op] = &candidate;
  }

  /// The objective (objective.h) of the assignment, once every op is decided.
  Expected<double> objectiveSeconds() {
    std::vector<rules::ShardedOp> shards;
    std::vector<double> nodeSeconds;
    shards.reserve(shards_.size());
    for (const ir::Op& op : graph_.ops()) {
      shards.push_back(*shards_[op.id]);
      if (chosen_[op.id] == nullptr) {
        auto cost = nodeCost(graph_, op, shards.back(), cluster_, edges_);
        if (!cost) return cost.error().in(fmt::format("op '{}'", op.name));
        nodeSeconds.push_back(cost->seconds);
        continue;
      }
      auto seconds = table_.nodeSeconds(op.id, *chosen_[op.id]);
      if (!seconds) return seconds.error().in(fmt::format("op '{}'", op.name));
      nodeSeconds.push_back(*seconds);
    }
    return assignmentSeconds(graph_, shards, cluster_, edges_, &nodeSeconds);
  }

 private:
  int64_t numDevices() const { return static_cast<int64_t>(ranks_.size()); }

  std::string strategyText(ir::OpId op) const {
    return layout::strategyToString(rules::strategyFromFactorCuts(table_.rule(op), cuts_[op]));
  }

  /// Calls `visit(neighbour, tensor)` for each op whose redistribution depends on `node`'s
  /// layout, with the tensor joining them: its inputs' producers (or, for a parameter or graph
  /// input, the tensor's other readers) and its outputs' consumers.
  template <class Visit>
  void forEachNeighbour(const ir::Op& node, Visit visit) const {
    for (ir::TensorId id : node.inputs) {
      const ir::Tensor& tensor = graph_.tensor(id);
      if (tensor.producer != ir::kNoOp) {
        visit(tensor.producer, tensor);
        continue;
      }
      for (ir::OpId consumer : tensor.consumers) visit(consumer, tensor);
    }
    for (ir::TensorId id : node.outputs) {
      const ir::Tensor& tensor = graph_.tensor(id);
      for (ir::OpId consumer : tensor.consumers) visit(consumer, tensor);
    }
  }

  void enqueueNeighbours(ir::OpId op) {
    forEachNeighbour(graph_.op(op), [&](ir::OpId neighbour, const ir::Tensor& tensor) {
      if (neighbour == op || shards_[neighbour]) return;
      frontier_.emplace(tensor.type.bytes(), -static_cast<int64_t>(neighbour), op);
    });
  }

  /// Some ops' decisions, to put back with restore().
  using Assignment =
      std::vector<std::tuple<ir::OpId, rules::FactorCuts, CandidateTable::Candidate*>>;

  Assignment assignmentOf(const std::vector<ir::OpId>& ops) const {
    Assignment assignment;
    for (ir::OpId op : ops) assignment.emplace_back(op, cuts_[op], chosen_[op]);
    return assignment;
  }

  void restore(const Assignment& assignment) {
    for (const auto& [op, cuts, candidate] : assignment) {
      if (candidate != nullptr) {
        choose(op, *candidate);
      } else {
        // A fix() made it (a seed of an unreached part): its cuts applied before, so again.
        (void)fix(op, cuts);
      }
    }
  }

  void undecide(ir::OpId op) {
    shards_[op].reset();
    cuts_[op].clear();
    chosen_[op] = nullptr;
  }

  /// respreadComponents' components: the ops joined by producer-to-consumer tensors that need no
  /// redistribution, two ops or more, without `anchor`, the kComponentMoves heaviest (forward
  /// FLOPs; the lower first op on a tie), each listed by op id.
  std::vector<std::vector<ir::OpId>> heaviestComponents(ir::OpId anchor) {
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

  /// An op's node cost under `shard` plus its redistribution to its decided neighbours; the node
  /// cost from the table when `shard` is one of its candidates.
  Expected<double> localSeconds(const ir::Op& node, const rules::ShardedOp& shard,
                                CandidateTable::Candidate* candidate) {
    Expected<double> own = Error{""};
    if (candidate != nullptr) {
      own = table_.nodeSeconds(node.id, *candidate);
    } else if (auto cost = nodeCost(graph_, node, shard, cluster_, edges_)) {
      own = cost->seconds;
    } else {
      own = cost.error();
    }
    if (!own) return own;
    auto edge = edgeSeconds(node.id, shard);
    if (!edge) return edge;
    return *own + *edge;
  }

  /// Least redistribution (to decided neighbours, and ahead to the decided ops beyond chains of
  /// undecided ones), then least compute, then the lexicographically smallest cuts.
  Status decideBest(ir::OpId op, ir::OpId via, PropagationResult& result) {
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
      const Key key{*edge + aheadSeconds + sync, candidate.computeSeconds};
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
                                     aheadText, formatSeconds(bestKey.second),
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
  CandidateTable& table_;
  EdgeCostCache& edges_;
  std::vector<std::optional<rules::ShardedOp>> shards_;
  std::vector<rules::FactorCuts> cuts_;
  std::vector<CandidateTable::Candidate*> chosen_;  ///< the table's candidate, or null (fixed)
  /// (connecting tensor bytes, -op id, decided neighbour): largest first, then lowest id.
  std::priority_queue<std::tuple<int64_t, int64_t, ir::OpId>> frontier_;
};

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
  std::vector<std::pair<double, size_t>> screened;  // (node seconds, index)
  for (size_t c = 0; c < (*candidates)->size(); ++c) {
    auto seconds = table.nodeSeconds(anchor.id, (**candidates)[c]);
    if (!seconds) return seconds.error().in(fmt::format("op '{}'", anchor.name));
    screened.emplace_back(*seconds, c);
  }
  std::sort(screened.begin(), screened.end());
  screened.resize(std::min(screened.size(), kSpreadAnchors));
  std::vector<Run> runs;
  for (const auto& [nodeSeconds, c] : screened) {
    Run run{0, c, std::make_unique<Propagator>(graph, ranks, cluster, options, table), {}};
    run.propagator->choose(anchor.id, (**candidates)[c]);
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
  if (*moved) {
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
