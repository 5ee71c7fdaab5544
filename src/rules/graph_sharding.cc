#include "rules/graph_sharding.h"

#include <fmt/format.h>

#include <deque>
#include <unordered_map>

#include "util/hash.h"

namespace autopar::rules {

namespace {

/// Remembers each distinct op's sharding rule and, per factor cuts, what they shard it into: the
/// rule depends only on the op's kind, attributes and operand types (shardingRuleFor), so a
/// model's repeated layers are ruled and sharded once, and the other layers copy the result.
class ShardingMemo {
 public:
  explicit ShardingMemo(const ir::Graph& graph) : graph_(graph) {}

  /// The op's rule, made on its first op of that kind, attributes and operand types.
  Expected<const ShardingRule*> rule(const ir::Op& op) {
    auto found = entry(op);
    if (!found) return found.error();
    return &(*found)->rule;
  }

  /// An op sharded by some cuts, and the strategy those cuts write.
  struct Form {
    FactorCuts cuts;
    ShardedOp op;
    layout::Strategy strategy;
  };

  /// The op sharded by `cuts` over `ranks` (the same ranks on every call). Fails, naming the op,
  /// as its rule or applyFactorCuts does.
  Expected<const Form*> shard(const ir::Op& op, const FactorCuts& cuts,
                              const std::vector<int>& ranks) {
    auto found = entry(op);
    if (!found) return found.error().in(fmt::format("op '{}'", op.name));
    Entry& e = **found;
    for (const Form& form : e.forms) {
      if (form.cuts == cuts) return &form;
    }
    layout::Strategy strategy = strategyFromFactorCuts(e.rule, cuts);
    auto applied = applyFactorCuts(e.rule, cuts, ranks);
    if (!applied) {
      return applied.error().in(
          fmt::format("op '{}' strategy {}", op.name, layout::strategyToString(strategy)));
    }
    return &e.forms.emplace_back(Form{cuts, std::move(*applied), std::move(strategy)});
  }

 private:
  struct Signature {
    ir::OpKind kind;
    const ir::OpAttrs* attrs;
    std::vector<ir::TensorType> inputs;
    std::vector<ir::TensorType> outputs;
    bool operator==(const Signature& other) const {
      return kind == other.kind && *attrs == *other.attrs && inputs == other.inputs &&
             outputs == other.outputs;
    }
  };
  struct Entry {
    Signature signature;
    ShardingRule rule;
    /// Deque: the pointers shard() hands out stay valid as forms are added.
    std::deque<Form> forms;
  };

  static size_t hashOf(const Signature& signature) {
    size_t seed = static_cast<size_t>(signature.kind);
    for (const auto* types : {&signature.inputs, &signature.outputs}) {
      util::hashCombine(seed, types->size());
      for (const ir::TensorType& type : *types) {
        util::hashCombineAll(seed, type.shape);
        util::hashCombine(seed, static_cast<size_t>(type.dtype));
      }
    }
    return seed;
  }

  Expected<Entry*> entry(const ir::Op& op) {
    Signature signature{op.kind, &op.attrs, graph_.inputTypes(op), graph_.outputTypes(op)};
    auto& bucket = byHash_[hashOf(signature)];
    for (size_t index : bucket) {
      if (entries_[index].signature == signature) return &entries_[index];
    }
    auto rule = shardingRuleFor(graph_, op);
    if (!rule) return rule.error();
    bucket.push_back(entries_.size());
    entries_.push_back({std::move(signature), std::move(*rule), {}});
    return &entries_.back();
  }

  const ir::Graph& graph_;
  std::deque<Entry> entries_;  ///< stable addresses for the rules handed out
  std::unordered_map<size_t, std::vector<size_t>> byHash_;  ///< hash -> entries
};

Status checkOverrideNames(const ir::Graph& graph,
                          const std::map<std::string, layout::Strategy>& overrides) {
  for (const auto& [opName, strategy] : overrides) {
    if (!graph.findOp(opName)) {
      return Error{
          fmt::format("--shard {}: no op named '{}' in graph '{}'", opName, opName, graph.name())};
    }
  }
  return {};
}

/// The user's strategy for `op`, if any, and where it came from.
const layout::Strategy* userStrategy(const ir::Op& op,
                                     const std::map<std::string, layout::Strategy>& overrides,
                                     StrategySource& source) {
  const auto override = overrides.find(op.name);
  if (override != overrides.end()) {
    source = StrategySource::kOverride;
    return &override->second;
  }
  if (!op.shard.empty()) {
    source = StrategySource::kAnnotation;
    return &op.shard;
  }
  source = StrategySource::kDefault;
  return nullptr;
}

Expected<FactorCuts> cutsOf(const ShardingRule& rule, const ir::Op& op,
                            const layout::Strategy& strategy) {
  auto cuts = factorCutsFromStrategy(rule, strategy);
  if (!cuts) {
    return cuts.error().in(
        fmt::format("op '{}' strategy {}", op.name, layout::strategyToString(strategy)));
  }
  return cuts;
}

Expected<GraphSharding> shardWithMemo(ShardingMemo& memo, const ir::Graph& graph,
                                      const std::vector<int>& ranks,
                                      const std::vector<FactorCuts>& cuts,
                                      const std::vector<StrategySource>& sources) {
  GraphSharding result;
  result.ops.reserve(graph.ops().size());
  result.strategies.reserve(graph.ops().size());
  for (const ir::Op& op : graph.ops()) {
    auto sharded = memo.shard(op, cuts.at(op.id), ranks);
    if (!sharded) return sharded.error();
    result.ops.push_back((*sharded)->op);
    result.strategies.push_back((*sharded)->strategy);
    result.sources.push_back(sources.at(op.id));
  }
  return result;
}

}  // namespace

Expected<GraphSharding> shardGraph(const ir::Graph& graph, const std::vector<int>& ranks,
                                   const std::map<std::string, layout::Strategy>& overrides) {
  if (auto status = checkOverrideNames(graph, overrides); !status) return status.error();
  std::vector<FactorCuts> cuts;
  std::vector<StrategySource> sources;
  ShardingMemo memo(graph);
  for (const ir::Op& op : graph.ops()) {
    auto rule = memo.rule(op);
    if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
    StrategySource source = StrategySource::kDefault;
    const layout::Strategy* strategy = userStrategy(op, overrides, source);
    if (strategy == nullptr) {
      cuts.push_back(defaultFactorCuts(**rule, static_cast<int64_t>(ranks.size())));
    } else {
      auto opCuts = cutsOf(**rule, op, *strategy);
      if (!opCuts) return opCuts.error();
      cuts.push_back(std::move(*opCuts));
    }
    sources.push_back(source);
  }
  return shardWithMemo(memo, graph, ranks, cuts, sources);
}

Expected<std::map<ir::OpId, FactorCuts>> annotatedCuts(
    const ir::Graph& graph, const std::map<std::string, layout::Strategy>& overrides) {
  if (auto status = checkOverrideNames(graph, overrides); !status) return status.error();
  std::map<ir::OpId, FactorCuts> result;
  for (const ir::Op& op : graph.ops()) {
    StrategySource source = StrategySource::kDefault;
    const layout::Strategy* strategy = userStrategy(op, overrides, source);
    if (strategy == nullptr) continue;
    auto rule = shardingRuleFor(graph, op);
    if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
    auto opCuts = cutsOf(*rule, op, *strategy);
    if (!opCuts) return opCuts.error();
    result.emplace(op.id, std::move(*opCuts));
  }
  return result;
}

Expected<GraphSharding> shardGraphWithCuts(const ir::Graph& graph, const std::vector<int>& ranks,
                                           const std::vector<FactorCuts>& cuts,
                                           const std::vector<StrategySource>& sources) {
  ShardingMemo memo(graph);
  return shardWithMemo(memo, graph, ranks, cuts, sources);
}

}  // namespace autopar::rules
