#include "search/op_level/recursive.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <tuple>

#include "search/op_level/edge_cost.h"
#include "search/op_level/propagation.h"

namespace autopar::search {

namespace {

/// Moving one element between devices costs about as much as this many FLOPs: an A100 computes
/// 312e12 bf16 FLOP/s while NVLink moves 300e9 B/s = 150e9 bf16 elements/s (hardware.json).
constexpr double kFlopsPerElement = 2000.0;
/// Ops doing at least this many FLOPs per output element are compute-heavy (a MatMul does 2k).
constexpr double kMainOpFlopsPerOutput = 64.0;
/// How far a rest-cost link may walk through shape-preserving ops to find a main op.
constexpr int kMaxLinkDepth = 8;
constexpr double kInfeasible = std::numeric_limits<double>::max();
/// Passes over a round's choices: the first, then settling passes until none changes.
constexpr int kSettlingPasses = 4;

enum Choice { kCutI, kCutJ, kCutK, kNoCut };
constexpr std::array<const char*, 4> kChoiceNames{"I", "J", "K", "no"};

struct SappAxes {
  std::array<int, 3> factor{-1, -1, -1};  ///< I, J, K factor indices, -1 when absent
};

bool isWeight(const ir::Graph& graph, ir::TensorId id) {
  const ir::Tensor& tensor = graph.tensor(id);
  return tensor.isParameter() && tensor.type.shape.size() >= 2;
}

bool factorInOperand(const rules::ShardingRule& rule, size_t operand, int factor) {
  for (const auto& dim : rule.operands[operand]) {
    for (const auto& part : dim) {
      if (part.factor == factor) return true;
    }
  }
  return false;
}

bool factorInOutputs(const rules::ShardingRule& rule, int factor) {
  for (const auto& result : rule.results) {
    for (const auto& dim : result) {
      for (const auto& part : dim) {
        if (part.factor == factor) return true;
      }
    }
  }
  return false;
}

int64_t factorSize(const rules::ShardingRule& rule, int factor) {
  int64_t size = 0;
  for (const auto& operand : rule.operands) {
    for (const auto& dim : operand) {
      for (const auto& part : dim) {
        if (part.factor == factor) size = std::max(size, part.size);
      }
    }
  }
  return size;
}

/// The largest non-batch pass-through factor satisfying `accept`, or -1.
template <class Accept>
int largestPassThrough(const rules::ShardingRule& rule, Accept accept) {
  int best = -1;
  for (int f = 0; f < static_cast<int>(rule.factors.size()); ++f) {
    const rules::Factor& factor = rule.factors[f];
    if (factor.isBatch || factor.kind != rules::FactorKind::kPassThrough || !accept(f)) continue;
    if (best < 0 || factorSize(rule, f) > factorSize(rule, best)) best = f;
  }
  return best;
}

SappAxes sappAxes(const ir::Graph& graph, const ir::Op& op, const rules::ShardingRule& rule) {
  SappAxes axes;
  for (int f = 0; f < static_cast<int>(rule.factors.size()); ++f) {
    const rules::Factor& factor = rule.factors[f];
    if (factor.isBatch && axes.factor[kCutI] < 0) axes.factor[kCutI] = f;
    if (!factor.isBatch && factor.kind == rules::FactorKind::kReduction && axes.factor[kCutK] < 0) {
      axes.factor[kCutK] = f;
    }
  }
  auto inWeight = [&](int f) {
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (isWeight(graph, op.inputs[i]) && factorInOperand(rule, i, f)) return true;
    }
    return false;
  };
  auto inEveryOperand = [&](int f) {
    for (size_t i = 0; i < rule.operands.size(); ++i) {
      if (!factorInOperand(rule, i, f)) return false;
    }
    return true;
  };
  auto notInOutputs = [&](int f) { return !factorInOutputs(rule, f); };
  int j = largestPassThrough(rule, inWeight);
  if (j < 0) j = largestPassThrough(rule, inEveryOperand);
  if (j < 0) j = largestPassThrough(rule, notInOutputs);
  axes.factor[kCutJ] = j;
  return axes;
}

bool isMainOp(const ir::Graph& graph, const ir::Op& op) {
  if (!op.shard.empty()) return true;
  for (ir::TensorId input : op.inputs) {
    if (isWeight(graph, input)) return true;
  }
  int64_t outputElements = 0;
  for (ir::TensorId output : op.outputs) {
    outputElements += ir::numElements(graph.tensor(output).type.shape);
  }
  return graph.forwardFlops(op) >= kMainOpFlopsPerOutput * static_cast<double>(outputElements);
}

/// A rest-cost link: this op's input `index` comes from `other`'s output `otherIndex` (upstream),
/// or this op's output `index` feeds `other`'s input `otherIndex` (downstream).
struct Link {
  bool upstream = true;
  size_t index = 0;
  ir::OpId other = ir::kNoOp;
  size_t otherIndex = 0;
};

std::string formatCost(double cost) { return fmt::format("{:g}", cost); }

class RecursiveSearch {
 public:
  RecursiveSearch(const ir::Graph& graph, const std::vector<int>& ranks,
                  const cluster::Cluster& cluster, const RecursiveOptions& options)
      : graph_(graph),
        ranks_(ranks),
        cluster_(cluster),
        options_(options),
        edges_(cluster, layout::RedistributionOptions{options.enableAllToAll}) {}

  Status prepare() {
    const size_t numOps = graph_.ops().size();
    rules_.reserve(numOps);
    isMain_.assign(numOps, false);
    for (const ir::Op& op : graph_.ops()) {
      auto rule = rules::shardingRuleFor(graph_, op);
      if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
      rules_.push_back(std::move(*rule));
      cuts_.emplace_back(rules_.back().factors.size(), 1);
      isMain_[op.id] = isMainOp(graph_, op);
    }
    for (const ir::Op& op : graph_.ops()) {
      if (!isMain_[op.id]) continue;
      mainOps_.push_back(op.id);
      axes_.emplace(op.id, sappAxes(graph_, op, rules_[op.id]));
      links_.emplace(op.id, linksOf(op));
      if (!op.shard.empty()) {
        auto cuts = rules::factorCutsFromStrategy(rules_[op.id], op.shard);
        if (!cuts) return cuts.error().in(fmt::format("op '{}'", op.name));
        annotated_.emplace(op.id, std::move(*cuts));
      }
    }
    for (const auto& [op, cuts] : annotated_) cuts_[op] = cuts;
    return refreshShards();
  }

  /// Each round: every main op chooses once, heaviest first, against the neighbours that chose
  /// before it; then, in settling passes, each chooses again from where it stood before the round
  /// against all its neighbours' choices of this round, until no choice changes. The first pass
  /// alone lets an op that chose early fix a layout its later neighbours must pay to meet (the
  /// attention between projections that chose apart).
  Status run(RecursiveResult& result) {
    const std::vector<int64_t> rounds = primeRounds(static_cast<int64_t>(ranks_.size()));
    roundDevices_ = 1;
    for (size_t round = 0; round < rounds.size(); ++round) {
      roundDevices_ *= rounds[round];
      const std::string roundTitle =
          fmt::format("Round {}/{} (cut by {})", round + 1, rounds.size(), rounds[round]);
      if (auto status = runRound(rounds[round], roundTitle, result); !status) return status;
    }
    return {};
  }

  double nextMemCoeff() const { return nextMemCoeff_; }

  std::map<ir::OpId, rules::FactorCuts> mainCuts() const {
    std::map<ir::OpId, rules::FactorCuts> fixed;
    for (ir::OpId op : mainOps_) fixed.emplace(op, cuts_[op]);
    return fixed;
  }

 private:
  /// One round's passes. An op chooses again in a settling pass only when a neighbour chose or
  /// changed its choice after the op last chose: otherwise its inputs, and so its choice, are as
  /// they were.
  Status runRound(int64_t prime, const std::string& roundTitle, RecursiveResult& result) {
    const size_t numOps = graph_.ops().size();
    decidedThisRound_.assign(numOps, false);
    std::vector<ir::OpId> order;
    for (ir::OpId op : orderByWeight()) {
      if (!annotated_.contains(op)) order.push_back(op);
    }
    std::vector<std::pair<rules::FactorCuts, rules::ShardedOp>> before;
    before.reserve(order.size());
    for (ir::OpId op : order) before.emplace_back(cuts_[op], shards_[op]);
    // A clock ticks at every choice made or changed: changedAt[op] is when op's last did,
    // sawAt[op] the time op last chose.
    std::vector<uint64_t> changedAt(numOps, 0);
    std::vector<uint64_t> sawAt(numOps, 0);
    uint64_t clock = 0;
    for (int pass = 1; pass <= kSettlingPasses; ++pass) {
      bool changed = false;
      for (size_t i = 0; i < order.size(); ++i) {
        const ir::OpId op = order[i];
        const std::vector<Link>& links = links_.at(op);
        if (pass > 1 && std::none_of(links.begin(), links.end(), [&](const Link& link) {
              return changedAt[link.other] > sawAt[op];
            })) {
          continue;
        }
        const rules::FactorCuts chosen = cuts_[op];
        if (pass > 1) std::tie(cuts_[op], shards_[op]) = before[i];
        const std::string title =
            options_.explain
                ? fmt::format("{}{}: {}", roundTitle,
                              pass > 1 ? fmt::format(", pass {}", pass) : "", graph_.op(op).name)
                : std::string();
        std::vector<std::string> lines;
        if (auto status = decide(op, prime, title, lines); !status) return status;
        sawAt[op] = clock;
        const bool moved = pass > 1 && cuts_[op] != chosen;
        if (pass == 1 || moved) {
          changedAt[op] = ++clock;
          for (auto& line : lines) result.explanation.push_back(std::move(line));
        }
        changed = changed || moved;
      }
      if (pass > 1 && !changed) break;
    }
    return {};
  }

  /// Walks from each data input up, and from each output down, through ops that keep the shape,
  /// to the nearest main ops.
  std::vector<Link> linksOf(const ir::Op& op) const {
    std::vector<Link> links;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (graph_.tensor(op.inputs[i]).isParameter()) continue;
      if (auto link = walkUp(op.inputs[i], kMaxLinkDepth))
        links.push_back({true, i, link->first, link->second});
    }
    for (size_t j = 0; j < op.outputs.size(); ++j) {
      walkDown(op.outputs[j], graph_.tensor(op.outputs[j]).type.shape, kMaxLinkDepth, j, links);
    }
    return links;
  }

  std::optional<std::pair<ir::OpId, size_t>> walkUp(ir::TensorId id, int depth) const {
    const ir::Tensor& tensor = graph_.tensor(id);
    if (tensor.producer == ir::kNoOp || depth == 0) return std::nullopt;
    const ir::Op& producer = graph_.op(tensor.producer);
    if (isMain_[producer.id]) {
      for (size_t j = 0; j < producer.outputs.size(); ++j) {
        if (producer.outputs[j] == id) return std::make_pair(producer.id, j);
      }
    }
    for (ir::TensorId input : producer.inputs) {
      if (graph_.tensor(input).type.shape == tensor.type.shape &&
          !graph_.tensor(input).isParameter()) {
        return walkUp(input, depth - 1);
      }
    }
    return std::nullopt;
  }

  void walkDown(ir::TensorId id, const ir::Shape& shape, int depth, size_t outputIndex,
                std::vector<Link>& links) const {
    if (depth == 0) return;
    for (ir::OpId consumerId : graph_.tensor(id).consumers) {
      const ir::Op& consumer = graph_.op(consumerId);
      if (isMain_[consumerId]) {
        for (size_t i = 0; i < consumer.inputs.size(); ++i) {
          if (consumer.inputs[i] == id) links.push_back({false, outputIndex, consumerId, i});
        }
        continue;
      }
      for (ir::TensorId output : consumer.outputs) {
        if (graph_.tensor(output).type.shape == shape)
          walkDown(output, shape, depth - 1, outputIndex, links);
      }
    }
  }

  Status refreshShards() {
    shards_.clear();
    for (const ir::Op& op : graph_.ops()) {
      auto shard = rules::applyFactorCuts(rules_[op.id], cuts_[op.id], ranks_);
      if (!shard) return shard.error().in(fmt::format("op '{}'", op.name));
      shards_.push_back(std::move(*shard));
    }
    return {};
  }

  /// Ops holding a weight first, heaviest first (FLOPs of the current shard, then the lower op
  /// id); then the main ops without one (attention, activation products), heaviest first. Those
  /// keep no weight, so no cut costs them memory: they follow the neighbours that chose before.
  std::vector<ir::OpId> orderByWeight() const {
    std::vector<std::tuple<bool, double, ir::OpId>> weighted;
    for (ir::OpId op : mainOps_) {
      const ir::Op& node = graph_.op(op);
      const bool holdsWeight = std::any_of(node.inputs.begin(), node.inputs.end(),
                                           [&](ir::TensorId id) { return isWeight(graph_, id); });
      weighted.emplace_back(!holdsWeight, -graph_.forwardFlops(node) * shards_[op].computeFraction,
                            op);
    }
    std::sort(weighted.begin(), weighted.end());
    std::vector<ir::OpId> order;
    for (const auto& [weightless, weight, op] : weighted) order.push_back(op);
    return order;
  }

  int64_t elementsOf(const std::vector<layout::TensorLayout>& layouts, size_t index) const {
    return layouts[index].sliceElements();
  }

  /// What one more cut by `prime` of a factor already cut `cut` ways adds to the all-reduce over
  /// its group, per element. A ring all-reduce over g devices moves 2 (g - 1) / g elements per
  /// element, so growing the group from `cut` to `cut x prime` adds 2 (prime - 1) / (cut x prime):
  /// 1 for the first halving, then 1/2, 1/4; never more than 1, MindSpore's flat cost (a first
  /// cut by 3 would add 4/3). That holds while the rounds so far cut no more devices than a node
  /// holds, taken as the cut groups staying on the node's fast links. It is a heuristic: the
  /// device matrix orders its axes by factor, not by round, so a group may still cross nodes.
  /// Once the rounds span nodes, each cut pays 1 again, as in MindSpore's model.
  double addedAllReduce(int64_t cut, int64_t prime) const {
    if (roundDevices_ > cluster_.devicesPerNode) return 1.0;
    return std::min(1.0, 2.0 * static_cast<double>(prime - 1) / static_cast<double>(cut * prime));
  }

  /// Elements of the op's weight operands, in the shards of `current`.
  double weightElements(ir::OpId op, const rules::ShardedOp& current) const {
    const ir::Op& node = graph_.op(op);
    double elements = 0;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (isWeight(graph_, node.inputs[i]))
        elements += static_cast<double>(elementsOf(current.inputs, i));
    }
    return elements;
  }

  double opCost(ir::OpId op, Choice choice, const rules::ShardedOp& current, int64_t prime) const {
    const ir::Op& node = graph_.op(op);
    const int factor = choice == kNoCut ? -1 : axes_.at(op).factor[choice];
    const double added =
        factor < 0 ? 1.0 : addedAllReduce(cuts_[op][static_cast<size_t>(factor)], prime);
    double cost = 0;
    switch (choice) {
      case kCutI:
        return options_.memCoeff * weightElements(op, current);
      case kCutJ:
        // An input the cut replicates has its gradient all-reduced over the cut in backward; a
        // graph input (the samples, token ids) has none, and reading it whole costs nothing.
        for (size_t i = 0; i < node.inputs.size(); ++i) {
          if (!factorInOperand(rules_[op], i, factor) &&
              graph_.tensor(node.inputs[i]).hasGradient())
            cost += static_cast<double>(elementsOf(current.inputs, i));
        }
        return added * cost;
      case kCutK:
        for (size_t j = 0; j < node.outputs.size(); ++j)
          cost += static_cast<double>(elementsOf(current.outputs, j));
        return added * cost;
      case kNoCut:
        // Both halves repeat the work, and the weights stay replicated as with an I cut.
        return graph_.forwardFlops(node) * current.computeFraction / 2.0 / kFlopsPerElement +
               opCost(op, kCutI, current, prime);
    }
    return cost;
  }

  Expected<double> restCost(ir::OpId op, const rules::ShardedOp& candidate) {
    double elements = 0;
    for (const Link& link : links_.at(op)) {
      // Only neighbours that already chose this round: the others will line up with this op.
      if (!decidedThisRound_[link.other]) continue;
      const rules::ShardedOp& other = shards_[link.other];
      // A K cut's op-cost already prices reducing its partial sums: the link starts from the
      // reduced layout, so the reduction is not charged twice.
      const layout::TensorLayout from =
          (link.upstream ? other.outputs[link.otherIndex] : candidate.outputs[link.index])
              .withoutPartial();
      const auto& to = link.upstream ? candidate.inputs[link.index] : other.inputs[link.otherIndex];
      const ir::Op& node = graph_.op(op);
      const ir::TensorId tensor =
          link.upstream ? node.inputs[link.index] : node.outputs[link.index];
      const int64_t elementBytes = ir::dtypeBytes(graph_.tensor(tensor).type.dtype);
      auto bytes = edges_.bytesPerDevice(from, to, elementBytes);
      if (!bytes) return bytes.error();
      elements += static_cast<double>(*bytes) / static_cast<double>(elementBytes);
    }
    return elements;
  }

  /// Only the I cut and no cut cost more as mem_coeff grows (op-cost(I) is mem_coeff x the
  /// weights' elements). A choice that grows slower than the chosen one overtakes it at some
  /// mem_coeff: the least such point above the search's own is where its plan first changes.
  void noteFlips(ir::OpId op, const std::array<double, 4>& totals, Choice best) {
    const double weights = weightElements(op, shards_[op]);
    auto slope = [&](int choice) { return choice == kCutI || choice == kNoCut ? weights : 0.0; };
    for (int choice = kCutI; choice <= kNoCut; ++choice) {
      if (choice == best || totals[choice] == kInfeasible || slope(choice) >= slope(best)) continue;
      const double flip =
          options_.memCoeff + (totals[choice] - totals[best]) / (slope(best) - slope(choice));
      nextMemCoeff_ = std::min(nextMemCoeff_, std::max(flip, options_.memCoeff));
    }
  }

  /// One main op's choice for this round; with `explain`, its decision lines go to `explained`.
  Status decide(ir::OpId op, int64_t prime, const std::string& title,
                std::vector<std::string>& explained) {
    std::array<double, 4> totals{kInfeasible, kInfeasible, kInfeasible, kInfeasible};
    std::array<std::optional<rules::ShardedOp>, 4> shards;
    if (options_.explain) explained.push_back(title);
    for (int choice = kCutI; choice <= kNoCut; ++choice) {
      rules::FactorCuts cuts = cuts_[op];
      if (choice != kNoCut) {
        const int factor = axes_.at(op).factor[choice];
        if (factor < 0) continue;
        cuts[factor] *= prime;
      }
      auto shard = rules::applyFactorCuts(rules_[op], cuts, ranks_);
      if (!shard) continue;  // the axis no longer divides
      const double opCostValue = opCost(op, static_cast<Choice>(choice), shards_[op], prime);
      auto rest = restCost(op, *shard);
      if (!rest) return rest.error();
      totals[choice] = opCostValue + *rest;
      shards[choice] = std::move(*shard);
      if (!options_.explain) continue;
      explained.push_back(
          fmt::format("{}, the op-cost is {}, the rest-cost is {}, and the total cost is {}",
                      choice == kNoCut ? "If do NOT cut the axis"
                                       : fmt::format("If the {}-axis is cut", kChoiceNames[choice]),
                      formatCost(opCostValue), formatCost(*rest), formatCost(totals[choice])));
    }
    const auto best =
        static_cast<Choice>(std::min_element(totals.begin(), totals.end()) - totals.begin());
    noteFlips(op, totals, best);
    if (!shards[best])
      return Error{fmt::format("op '{}': no valid choice in this round", graph_.op(op).name)};
    if (best != kNoCut) cuts_[op][axes_.at(op).factor[best]] *= prime;
    shards_[op] = std::move(*shards[best]);
    decidedThisRound_[op] = true;
    if (!options_.explain) return {};
    explained.push_back(
        fmt::format("The costs of cutting the I-axis/J-axis/K-axis/no_cut are : [const "
                    "vector]{{{}, {}, {}, {}}}",
                    formatCost(totals[0]), formatCost(totals[1]), formatCost(totals[2]),
                    formatCost(totals[3])));
    explained.push_back(best == kNoCut
                            ? "Choose NOT to cut"
                            : fmt::format("Choose to cut the {}-axis", kChoiceNames[best]));
    return {};
  }

  const ir::Graph& graph_;
  const std::vector<int>& ranks_;
  const cluster::Cluster& cluster_;
  const RecursiveOptions& options_;
  EdgeCostCache edges_;
  std::vector<rules::ShardingRule> rules_;
  std::vector<rules::FactorCuts> cuts_;
  std::vector<rules::ShardedOp> shards_;
  std::vector<bool> isMain_;
  std::vector<bool> decidedThisRound_;
  int64_t roundDevices_ = 1;  ///< devices the rounds so far, this one included, cut over
  double nextMemCoeff_ = std::numeric_limits<double>::infinity();  ///< noteFlips
  std::vector<ir::OpId> mainOps_;
  std::map<ir::OpId, SappAxes> axes_;
  std::map<ir::OpId, std::vector<Link>> links_;
  std::map<ir::OpId, rules::FactorCuts> annotated_;
};

}  // namespace

std::vector<int64_t> primeRounds(int64_t count) {
  std::vector<int64_t> primes;
  for (int64_t p = 2; p * p <= count; ++p) {
    while (count % p == 0) {
      primes.push_back(p);
      count /= p;
    }
  }
  if (count > 1) primes.push_back(count);
  return primes;
}

Expected<RecursiveResult> recursiveProgramming(const ir::Graph& graph,
                                               const std::vector<int>& ranks,
                                               const cluster::Cluster& cluster,
                                               const RecursiveOptions& options) {
  RecursiveSearch search(graph, ranks, cluster, options);
  if (auto status = search.prepare(); !status) return status.error();
  RecursiveResult result;
  if (auto status = search.run(result); !status) return status.error();
  PropagationOptions propagation;
  propagation.enableAllToAll = options.enableAllToAll;
  propagation.costModel = options.costModel;
  propagation.sharedParameterConflictIsError = false;
  auto spread = propagateStrategies(graph, ranks, cluster, search.mainCuts(), propagation);
  if (!spread) return spread.error();
  result.cuts = std::move(spread->cuts);
  result.nextMemCoeff = search.nextMemCoeff();
  return result;
}

}  // namespace autopar::search
