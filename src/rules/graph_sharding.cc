#include "rules/graph_sharding.h"

#include <fmt/format.h>

namespace autopar::rules {

Expected<GraphSharding> shardGraph(const ir::Graph& graph, const std::vector<int>& ranks,
                                   const std::map<std::string, layout::Strategy>& overrides) {
  for (const auto& [opName, strategy] : overrides) {
    if (!graph.findOp(opName)) {
      return Error{
          fmt::format("--shard {}: no op named '{}' in graph '{}'", opName, opName, graph.name())};
    }
  }
  const auto numDevices = static_cast<int64_t>(ranks.size());
  GraphSharding result;
  for (const ir::Op& op : graph.ops()) {
    auto rule = shardingRuleFor(graph, op);
    if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
    FactorCuts cuts;
    StrategySource source = StrategySource::kDefault;
    const auto override = overrides.find(op.name);
    const layout::Strategy* strategy = nullptr;
    if (override != overrides.end()) {
      strategy = &override->second;
      source = StrategySource::kOverride;
    } else if (!op.shard.empty()) {
      strategy = &op.shard;
      source = StrategySource::kAnnotation;
    }
    if (strategy != nullptr) {
      auto fromStrategy = factorCutsFromStrategy(*rule, *strategy);
      if (!fromStrategy) {
        return fromStrategy.error().in(
            fmt::format("op '{}' strategy {}", op.name, layout::strategyToString(*strategy)));
      }
      cuts = std::move(*fromStrategy);
    } else {
      cuts = defaultFactorCuts(*rule, numDevices);
    }
    auto sharded = applyFactorCuts(*rule, cuts, ranks);
    if (!sharded) return sharded.error().in(fmt::format("op '{}'", op.name));
    result.strategies.push_back(strategyFromFactorCuts(*rule, cuts));
    result.ops.push_back(std::move(*sharded));
    result.sources.push_back(source);
  }
  return result;
}

}  // namespace autopar::rules
