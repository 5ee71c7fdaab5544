#include "rules/graph_sharding.h"

#include <fmt/format.h>

namespace autopar::rules {

namespace {

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

}  // namespace

Expected<GraphSharding> shardGraph(const ir::Graph& graph, const std::vector<int>& ranks,
                                   const std::map<std::string, layout::Strategy>& overrides) {
  if (auto status = checkOverrideNames(graph, overrides); !status) return status.error();
  std::vector<FactorCuts> cuts;
  std::vector<StrategySource> sources;
  for (const ir::Op& op : graph.ops()) {
    auto rule = shardingRuleFor(graph, op);
    if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
    StrategySource source = StrategySource::kDefault;
    const layout::Strategy* strategy = userStrategy(op, overrides, source);
    if (strategy == nullptr) {
      cuts.push_back(defaultFactorCuts(*rule, static_cast<int64_t>(ranks.size())));
    } else {
      auto opCuts = cutsOf(*rule, op, *strategy);
      if (!opCuts) return opCuts.error();
      cuts.push_back(std::move(*opCuts));
    }
    sources.push_back(source);
  }
  return shardGraphWithCuts(graph, ranks, cuts, sources);
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
  GraphSharding result;
  for (const ir::Op& op : graph.ops()) {
    auto rule = shardingRuleFor(graph, op);
    if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
    auto sharded = applyFactorCuts(*rule, cuts.at(op.id), ranks);
    if (!sharded) {
      return sharded.error().in(
          fmt::format("op '{}' strategy {}", op.name,
                      layout::strategyToString(strategyFromFactorCuts(*rule, cuts.at(op.id)))));
    }
    result.strategies.push_back(strategyFromFactorCuts(*rule, cuts.at(op.id)));
    result.ops.push_back(std::move(*sharded));
    result.sources.push_back(sources.at(op.id));
  }
  return result;
}

}  // namespace autopar::rules
