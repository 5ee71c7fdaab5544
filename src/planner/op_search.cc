#include "planner/op_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "ir/setting.h"
#include "rules/sharding_rule.h"
#include "search/op_level/driver.h"

namespace autopar::planner {

namespace {

constexpr std::pair<OpSearch, std::string_view> kOpSearchNames[] = {
    {OpSearch::kMegatron, "megatron"},
    {OpSearch::kShardingPropagation, "sharding_propagation"},
    {OpSearch::kRecursiveProgramming, "recursive_programming"},
    {OpSearch::kIlp, "ilp"},
};

/// The seconds CBC may take on one probe; a probe is one layer of each stack and the model's
/// ends (tens of ops), which it solves in well under a second.
constexpr double kProbeIlpSeconds = 30;

}  // namespace

search::SearchMode searchModeOf(OpSearch search) {
  switch (search) {
    case OpSearch::kShardingPropagation:
      return search::SearchMode::kShardingPropagation;
    case OpSearch::kRecursiveProgramming:
      return search::SearchMode::kRecursiveProgramming;
    case OpSearch::kIlp:
    case OpSearch::kMegatron:
      break;
  }
  return search::SearchMode::kIlp;
}

std::string_view opSearchName(OpSearch search) {
  for (const auto& [candidate, name] : kOpSearchNames) {
    if (candidate == search) return name;
  }
  return "unknown";
}

Expected<OpSearch> parseOpSearch(std::string_view name) {
  for (const auto& [search, candidate] : kOpSearchNames) {
    if (candidate == name) return search;
  }
  return Error{fmt::format(
      "{}: expected megatron, sharding_propagation, recursive_programming or ilp, got {}",
      ir::flag(ir::Setting::kOpSearch), name)};
}

std::vector<std::string> blockOpKeys(const ir::Graph& graph) {
  std::vector<std::string> keys;
  keys.reserve(graph.ops().size());
  std::map<std::string, int> position;  // ops seen so far in each block
  for (const ir::Op& op : graph.ops()) {
    if (!ir::isStackLayer(op.block)) {
      keys.push_back(op.name);
      continue;
    }
    const std::string prefix = op.block.substr(0, op.block.rfind('.') + 1);
    keys.push_back(fmt::format("{}#{}", prefix, position[op.block]++));
  }
  return keys;
}

Expected<std::vector<rules::FactorCuts>> liftBlockSharding(const BlockSharding& sharding,
                                                           const ir::Graph& graph,
                                                           int64_t dataParallel) {
  const std::vector<std::string> keys = blockOpKeys(graph);
  std::vector<rules::FactorCuts> lifted;
  lifted.reserve(keys.size());
  for (const ir::Op& op : graph.ops()) {
    const auto found = sharding.cuts.find(keys[op.id]);
    if (found == sharding.cuts.end()) {
      return Error{fmt::format("op '{}' ({}): the block probe has no op in its place", op.name,
                               keys[op.id])};
    }
    auto rule = rules::shardingRuleFor(graph, op);
    if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
    rules::FactorCuts cuts = found->second;
    if (cuts.size() != rule->factors.size()) {
      return Error{fmt::format("op '{}': the block probe's op in its place has {} factors, not {}",
                               op.name, cuts.size(), rule->factors.size())};
    }
    if (dataParallel > 1) {
      auto batch = std::find_if(rule->factors.begin(), rule->factors.end(),
                                [](const rules::Factor& factor) { return factor.isBatch; });
      // An op without a batch factor (none in the built transformers) stays replicated over the
      // data-parallel ranks.
      if (batch != rule->factors.end()) {
        // rules::shardGraphWithCuts checks that the batch divides.
        cuts[static_cast<size_t>(batch - rule->factors.begin())] *= dataParallel;
      }
    }
    lifted.push_back(std::move(cuts));
  }
  return lifted;
}

BlockShardingOracle::BlockShardingOracle(frontend::TransformerConfig transformer,
                                         cluster::Cluster cluster, cost::CostModel costModel)
    : transformer_(std::move(transformer)),
      cluster_(std::move(cluster)),
      costModel_(std::move(costModel)) {}

int BlockShardingOracle::probes() const { return static_cast<int>(cache_.size()); }

Expected<std::shared_ptr<const BlockSharding>> BlockShardingOracle::shard(
    const BlockShardingQuery& query) {
  if (auto cached = cache_.find(query); cached != cache_.end()) return cached->second;
  auto sharding = probe(query);
  if (!sharding) {
    return sharding.error().in(
        fmt::format("{} (TP {} CP {} micro-batch {})",
                    ir::flag(ir::Setting::kOpSearch, opSearchName(query.search)), query.tp,
                    query.cp, query.microBatch));
  }
  auto shared = std::make_shared<const BlockSharding>(std::move(*sharding));
  cache_.emplace(query, shared);
  return shared;
}

Expected<BlockSharding> BlockShardingOracle::probe(const BlockShardingQuery& query) const {
  frontend::TransformerConfig probe = transformer_;
  probe.layers = 1;
  if (probe.vision.layers > 0) probe.vision.layers = 1;
  probe.microBatch = query.microBatch;
  if (query.sequence > 0) probe.seq = query.sequence;
  // No annotations: the search chooses every op's strategy.
  probe.parallel.reset();
  auto graph = frontend::buildTransformer(probe);
  if (!graph) return graph.error();
  const int64_t devices = query.tp * query.cp;
  if (devices > cluster_.numDevices) {
    return Error{fmt::format("the submesh of {} devices is larger than the cluster's {}", devices,
                             cluster_.numDevices)};
  }
  std::vector<int> ranks(static_cast<size_t>(devices));
  std::iota(ranks.begin(), ranks.end(), 0);
  search::SearchRequest request;
  request.mode = searchModeOf(query.search);
  request.memoryLimitBytes = cluster_.device.memoryBytes;
  request.timeLimitSeconds = kProbeIlpSeconds;
  request.costModel = costModel_;
  auto outcome = search::searchStrategies(*graph, ranks, cluster_, request);
  if (!outcome) return outcome.error();
  BlockSharding sharding;
  sharding.submeshDevices = devices;
  sharding.explanation = std::move(outcome->explanation);
  const std::vector<std::string> keys = blockOpKeys(*graph);
  for (const ir::Op& op : graph->ops()) {
    sharding.cuts.emplace(keys[op.id], outcome->sharding.ops[op.id].cuts);
  }
  return sharding;
}

}  // namespace autopar::planner
