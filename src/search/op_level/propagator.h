// The engine behind propagation.h (internal to src/search/op_level): the candidate strategies of
// every op with their costs (CandidateTable), and the Propagator, which spreads layouts from the
// decided ops to their neighbours (propagator.cc) and improves a full assignment by local moves
// (propagator_moves.cc).

#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cost/op_cost.h"
#include "search/op_level/edge_cost.h"
#include "search/op_level/objective.h"
#include "search/op_level/propagation.h"

namespace autopar::search::detail {

inline std::string formatSeconds(double seconds) { return fmt::format("{:.3g} s", seconds); }

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
        costModel_(options.costModel),
        deviceConstants_(costModel_->forDevice(cluster.device.name)),
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
  /// The cost model's constants for the cluster's device.
  [[nodiscard]] const cost::CostConstants& deviceConstants() const { return deviceConstants_; }

  /// The op's full-device strategies that apply (rules::fullDeviceCuts order).
  Expected<std::vector<Candidate>*> candidates(ir::OpId op) {
    if (candidates_[op]) return &*candidates_[op];
    std::vector<Candidate> list;
    const ir::Op& node = graph_.op(op);
    for (auto& cuts : rules::fullDeviceCuts(rules_[op], static_cast<int64_t>(ranks_.size()))) {
      auto shard = rules::applyFactorCuts(rules_[op], cuts, ranks_);
      if (!shard) continue;
      const double compute =
          cost::costOfOp(graph_, node, *shard, cluster_, deviceConstants_).totalSeconds();
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
    auto cost =
        nodeCost(graph_, graph_.op(op), candidate.shard, cluster_, deviceConstants_, edges_);
    if (!cost) return cost.error();
    candidate.nodeSeconds = cost->seconds;
    return cost->seconds;
  }

  /// The op's candidates of least node cost, at most `count`, `skip` left out (on a tie, the one
  /// listed first).
  Expected<std::vector<Candidate*>> leastNodeCost(ir::OpId op, size_t count,
                                                  const Candidate* skip = nullptr) {
    auto list = candidates(op);
    if (!list) return list.error().in(fmt::format("op '{}'", graph_.op(op).name));
    std::vector<std::pair<double, Candidate*>> ranked;
    for (Candidate& candidate : **list) {
      if (&candidate == skip) continue;
      auto seconds = nodeSeconds(op, candidate);
      if (!seconds) return seconds.error().in(fmt::format("op '{}'", graph_.op(op).name));
      ranked.emplace_back(*seconds, &candidate);
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Candidate*> least;
    for (const auto& [seconds, candidate] : ranked) {
      if (least.size() == count) break;
      least.push_back(candidate);
    }
    return least;
  }

 private:
  const ir::Graph& graph_;
  const std::vector<int>& ranks_;
  const cluster::Cluster& cluster_;
  cost::CostModel costModel_;  ///< held so that deviceConstants_ outlives the options
  const cost::CostConstants& deviceConstants_;
  EdgeCostCache edges_;
  std::vector<rules::ShardingRule> rules_;
  std::vector<std::optional<std::vector<Candidate>>> candidates_;
};

/// One assignment of strategies to the graph's ops over `ranks`, built up and improved: fix and
/// choose decide ops, spread decides the rest from them (MindSpore's sharding propagation: each
/// op takes the strategy that redistributes least to its decided neighbours), and the local moves
/// (refine, respreadComponents, respreadRoles) lower objective.h's sum, the one the ILP
/// minimises.
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

  Status fix(ir::OpId op, const rules::FactorCuts& cuts);

  /// Decides every op reachable from the decided ones, largest connecting tensor first.
  Status spread(PropagationResult& result);

  /// Coordinate descent once every op is decided: each op other than `anchor` chooses again,
  /// against all its neighbours, the strategy with the least node cost (objective.h) plus
  /// redistribution, and keeps it when that is lower than where it stands; passes repeat until
  /// none changes, at most kRefinePasses. Every change lowers the objective, so it ends.
  Status refine(ir::OpId anchor, PropagationResult& result);

  /// A large-neighbourhood move once refine has converged. The ops joined by tensors that cross
  /// no redistribution form components; refine moves one op at a time, so it cannot move a
  /// component whose ops must change together (a residual stream from batch-and-sequence parts
  /// to batch alone, where every op half-way pays two redistributions). Each of the
  /// kComponentMoves heaviest components (forward FLOPs) that do not hold `anchor` is undecided
  /// and spread again from each of its heaviest op's kComponentStarts least node-cost strategies,
  /// the rest of the graph as it stands; the least objective is kept. Returns whether one moved.
  Expected<bool> respreadComponents(ir::OpId anchor, PropagationResult& result);

  /// The same move for the ops that play one role in every repeated block (the gate projection
  /// of each layer: the op at one index of blocks "llm.layer.<i>"), where refine and the
  /// components cannot move a layer's ops together (a projection's partial sums cost a reduction
  /// inside the block). For each of the kRoleMoves heaviest roles without `anchor`, the ops within
  /// kRoleRadius of every member are undecided and spread again from the members, all set to one
  /// of the first member's kComponentStarts least node-cost strategies; the least objective is
  /// kept. Returns whether one moved.
  Expected<bool> respreadRoles(ir::OpId anchor, PropagationResult& result);

  /// Conflicts between fixed ops: a redistribution on an edge both of whose ends were fixed.
  Status collectConflicts(const std::map<ir::OpId, rules::FactorCuts>& fixed,
                          PropagationResult& result);

  std::vector<rules::FactorCuts> cuts() const { return cuts_; }

  /// Decides `op` as one of its table candidates.
  void choose(ir::OpId op, CandidateTable::Candidate& candidate);

  /// The objective (objective.h) of the assignment, once every op is decided.
  Expected<double> objectiveSeconds();

 private:
  int64_t numDevices() const { return static_cast<int64_t>(ranks_.size()); }

  std::string strategyText(ir::OpId op) const;

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

  void enqueueNeighbours(ir::OpId op);

  /// Some ops' decisions, to put back with restore().
  using Assignment =
      std::vector<std::tuple<ir::OpId, rules::FactorCuts, CandidateTable::Candidate*>>;

  Assignment assignmentOf(const std::vector<ir::OpId>& ops) const;

  void restore(const Assignment& assignment);

  void undecide(ir::OpId op);

  /// respreadComponents' components: the ops joined by producer-to-consumer tensors that need no
  /// redistribution, two ops or more, without `anchor`, the kComponentMoves heaviest (forward
  /// FLOPs; the lower first op on a tie), each listed by op id.
  std::vector<std::vector<ir::OpId>> heaviestComponents(ir::OpId anchor);

  /// respreadRoles' roles: per repeated block kind, the ops at one index of every block, the
  /// kRoleMoves heaviest (forward FLOPs) without `anchor`.
  std::vector<std::vector<ir::OpId>> heaviestRoles(ir::OpId anchor) const;

  /// The ops within `radius` neighbour steps of `ops` (forEachNeighbour), `anchor` left out.
  std::vector<ir::OpId> region(const std::vector<ir::OpId>& ops, int radius, ir::OpId anchor) const;

  /// The large-neighbourhood move of respreadComponents and respreadRoles: for each of `starts`,
  /// undecides `ops`, lets `seed` decide some of them (false: the start does not apply) and
  /// spreads to the rest; keeps the assignment whose objective is least, if below the current
  /// one, and returns its start (null: none, everything as it was).
  Expected<CandidateTable::Candidate*> respread(
      const std::vector<ir::OpId>& ops, const std::vector<CandidateTable::Candidate*>& starts,
      const std::function<Expected<bool>(CandidateTable::Candidate*)>& seed);

  /// The part of the objective (objective.h) that `ops`' strategies change: their node costs and
  /// the redistribution on every edge with an end among them.
  /// `in` marks `ops` (by OpId).
  Expected<double> regionSeconds(const std::vector<ir::OpId>& ops, const std::vector<bool>& in);

  /// The op's node cost (objective.h) under `shard`: from the table when `candidate` is the
  /// table's entry for it.
  Expected<double> nodeSecondsOf(const ir::Op& op, const rules::ShardedOp& shard,
                                 CandidateTable::Candidate* candidate);

  std::optional<ir::OpId> heaviestUndecided() const;

  /// Redistribution seconds between `candidate` for `op` and every decided neighbour.
  Expected<double> edgeSeconds(ir::OpId op, const rules::ShardedOp& candidate);

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
                    std::set<std::pair<ir::TensorId, uint32_t>>& walked) const;

  /// A tensor's consumers, each once (an op reading the tensor twice is listed twice).
  static std::vector<ir::OpId> uniqueConsumers(const ir::Tensor& tensor);

  /// The dims of `op`'s input `index` that its rule cannot split (kNeedReplication), as a mask.
  uint32_t unsplittableDims(ir::OpId op, size_t index) const;

  static void addPoint(const AheadPoint& found, std::vector<AheadPoint>& points);

  /// `layout` with the dims in `mask` whole.
  static layout::TensorLayout gathered(const layout::TensorLayout& layout, uint32_t mask);

  /// What carrying `layout` down the chains costs: at each point, the redistribution into the
  /// decided op's input, or the gather of the dims an undecided op cannot split.
  Expected<double> secondsAhead(const std::vector<AheadPoint>& points,
                                const layout::TensorLayout& layout);

  /// The decided layout a tensor arrives in, and the op that decided it.
  struct SourceLayout {
    layout::TensorLayout layout;
    ir::OpId op = ir::kNoOp;
  };
  /// The decided layout a tensor arrives in: its producer's output, or for a parameter or input
  /// the layout of its first decided consumer other than `self` (the storage layout).
  std::optional<SourceLayout> decidedSourceLayout(const ir::Tensor& tensor, ir::OpId self) const;

  /// An op's node cost under `shard` plus its redistribution to its decided neighbours; the node
  /// cost from the table when `shard` is one of its candidates.
  Expected<double> localSeconds(const ir::Op& node, const rules::ShardedOp& shard,
                                CandidateTable::Candidate* candidate);

  /// Least redistribution (to decided neighbours, and ahead to the decided ops beyond chains of
  /// undecided ones), then least compute, then the lexicographically smallest cuts.
  Status decideBest(ir::OpId op, ir::OpId via, PropagationResult& result);

  Status checkSharedParameter(const ir::Tensor& tensor,
                              const std::vector<std::pair<ir::OpId, size_t>>& fixedUses);

  Status recordConflict(const ir::Tensor& tensor, ir::OpId consumer, size_t index,
                        PropagationResult& result);

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

}  // namespace autopar::search::detail
