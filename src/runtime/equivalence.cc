#include "runtime/equivalence.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "rules/sharding_rule.h"

namespace autopar::runtime {

Expected<rules::GraphSharding> unshardedSharding(const ir::Graph& graph) {
  std::vector<rules::FactorCuts> cuts;
  std::vector<rules::StrategySource> sources;
  for (const ir::Op& op : graph.ops()) {
    auto rule = rules::shardingRuleFor(graph, op);
    if (!rule) return rule.error().in(op.name);
    cuts.emplace_back(rule->factors.size(), 1);
    sources.push_back(rules::StrategySource::kDefault);
  }
  return rules::shardGraphWithCuts(graph, {0}, cuts, sources);
}

Difference lossDifference(const RankResult& reference, const std::vector<RankResult>& ranks) {
  Difference worst;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& step : ranks[r].steps) {
      const double expected = reference.steps[static_cast<size_t>(step.step)].loss;
      const double relative = std::abs(step.loss - expected) / std::abs(expected);
      if (relative >= worst.value) {
        worst = {relative, fmt::format("step {} on rank {}", step.step, r)};
      }
    }
  }
  return worst;
}

Difference parameterDifference(const RankResult& reference, const std::vector<RankResult>& ranks) {
  std::map<std::string, const ParameterBlock*> whole;
  for (const auto& block : reference.parameters) whole[block.name] = &block;
  Difference worst;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& block : ranks[r].parameters) {
      const ParameterBlock& full = *whole.at(block.name);
      double scale = 0;
      for (float v : full.values) scale = std::max(scale, static_cast<double>(std::abs(v)));
      // Walk the block's elements in row-major order and find each in the full tensor.
      std::vector<int64_t> index(block.ranges.size());
      for (size_t d = 0; d < index.size(); ++d) index[d] = block.ranges[d].first;
      double diff = 0;
      for (float value : block.values) {
        int64_t flat = 0;
        for (size_t d = 0; d < index.size(); ++d) flat = flat * full.fullShape[d] + index[d];
        diff = std::max(
            diff, std::abs(static_cast<double>(value) - full.values[static_cast<size_t>(flat)]));
        for (size_t d = index.size(); d-- > 0;) {
          if (++index[d] < block.ranges[d].second) break;
          index[d] = block.ranges[d].first;
        }
      }
      const double relative = scale > 0 ? diff / scale : diff;
      if (relative >= worst.value) {
        worst = {relative, fmt::format("{} on rank {}", block.name, r)};
      }
    }
  }
  return worst;
}

}  // namespace autopar::runtime
