#include "search/op_level/driver.h"

#include <fmt/format.h>

#include "search/op_level/ilp.h"
#include "search/op_level/layer_fold.h"
#include "search/op_level/recursive.h"
#include "util/limits.h"

namespace autopar::search {

namespace {

constexpr std::pair<SearchMode, std::string_view> kModeNames[] = {
    {SearchMode::kDataParallel, "data_parallel"},
    {SearchMode::kSemiAuto, "semi_auto"},
    {SearchMode::kShardingPropagation, "sharding_propagation"},
    {SearchMode::kRecursiveProgramming, "recursive_programming"},
    {SearchMode::kIlp, "ilp"},
};

Expected<SearchOutcome> dataParallel(const ir::Graph& graph, const std::vector<int>& ranks) {
  std::vector<rules::FactorCuts> cuts;
  for (const ir::Op& op : graph.ops()) {
    auto rule = rules::shardingRuleFor(graph, op);
    if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
    cuts.push_back(rules::defaultFactorCuts(*rule, static_cast<int64_t>(ranks.size())));
  }
  const std::vector<rules::StrategySource> sources(cuts.size(), rules::StrategySource::kDefault);
  auto sharding = rules::shardGraphWithCuts(graph, ranks, cuts, sources);
  if (!sharding) return sharding.error();
  return SearchOutcome{std::move(*sharding), {}, {}};
}

/// Where each op's strategy came from when a search started from the user's fixed ops.
std::vector<rules::StrategySource> searchSources(const ir::Graph& graph,
                                                 const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                                 const SearchRequest& request) {
  std::vector<rules::StrategySource> sources(graph.ops().size(), rules::StrategySource::kSearch);
  for (const auto& [opId, cuts] : fixed) {
    sources[opId] = request.overrides.contains(graph.op(opId).name)
                        ? rules::StrategySource::kOverride
                        : rules::StrategySource::kAnnotation;
  }
  return sources;
}

/// Whether the whole-graph search `mode` finishes on `graph` within the measured op limit
/// (util/limits.h); the error says what the graph holds (`what`: "the graph") and what to use
/// instead.
Status checkSearchSize(const ir::Graph& graph, SearchMode mode,
                       std::string_view what = "the graph") {
  int64_t limit = 0;
  if (mode == SearchMode::kShardingPropagation) limit = limits::kMaxPropagationOps;
  if (mode == SearchMode::kRecursiveProgramming) limit = limits::kMaxRecursiveOps;
  if (mode == SearchMode::kIlp) limit = limits::kMaxIlpOps;
  const auto ops = static_cast<int64_t>(graph.ops().size());
  if (limit == 0 || ops <= limit) return {};
  return Error{fmt::format(
      "--search {}: {} has {} ops, above the {} this search finishes within a minute "
      "(docs/limits.md); plan fewer layers, use --search semi_auto, or search the layers with "
      "`autopar search`",
      searchModeName(mode), what, ops, limit)};
}

/// What a whole-graph search of `mode` runs on: `graph` with its repeated layers folded
/// (layer_fold.h) when `foldLayers` and they fold (nullopt: the graph itself), checked against
/// the search's op limit.
Expected<std::optional<LayerFold>> foldForSearch(const ir::Graph& graph, SearchMode mode,
                                                 bool foldLayers) {
  std::optional<LayerFold> fold;
  if (foldLayers) fold = foldRepeatedLayers(graph);
  if (auto status = checkSearchSize(fold ? fold->graph : graph, mode,
                                    fold ? "the graph, its repeated layers folded," : "the graph");
      !status) {
    return status.error();
  }
  return fold;
}

Expected<SearchOutcome> propagation(const ir::Graph& graph, const std::vector<int>& ranks,
                                    const cluster::Cluster& cluster, const SearchRequest& request) {
  auto fixed = rules::annotatedCuts(graph, request.overrides);
  if (!fixed) return fixed.error();
  PropagationOptions options;
  options.enableAllToAll = request.enableAllToAll;
  options.costModel = request.costModel;
  // Unannotated, the search anchors and refines over the whole graph: it decides each repeated
  // layer once (layer_fold.h). Annotated ops spread in one pass, and their conflicts are named
  // per op, so an annotated graph is searched whole.
  auto folded = foldForSearch(graph, SearchMode::kShardingPropagation, fixed->empty());
  if (!folded) return folded.error();
  const std::optional<LayerFold>& fold = *folded;
  if (fold) options.copies = fold->copies;
  auto result = propagateStrategies(fold ? fold->graph : graph, ranks, cluster, *fixed, options);
  if (!result) return result.error();
  if (fold) {
    result->cuts = unfoldCuts(*fold, result->cuts);
    result->log.insert(result->log.begin(), fold->summary.begin(), fold->summary.end());
  }
  const auto sources = searchSources(graph, *fixed, request);
  auto sharding = rules::shardGraphWithCuts(graph, ranks, result->cuts, sources);
  if (!sharding) return sharding.error();
  return SearchOutcome{std::move(*sharding), std::move(result->log), std::move(result->conflicts)};
}

Expected<SearchOutcome> recursive(const ir::Graph& graph, const std::vector<int>& ranks,
                                  const cluster::Cluster& cluster, const SearchRequest& request) {
  RecursiveOptions options;
  options.memCoeff = request.memCoeff;
  options.explain = request.explain;
  options.enableAllToAll = request.enableAllToAll;
  options.costModel = request.costModel;
  auto result = recursiveProgramming(graph, ranks, cluster, options);
  if (!result) return result.error();
  std::vector<rules::StrategySource> sources(graph.ops().size(), rules::StrategySource::kSearch);
  for (const ir::Op& op : graph.ops()) {
    if (!op.shard.empty()) sources[op.id] = rules::StrategySource::kAnnotation;
  }
  auto sharding = rules::shardGraphWithCuts(graph, ranks, result->cuts, sources);
  if (!sharding) return sharding.error();
  return SearchOutcome{
      std::move(*sharding), std::move(result->explanation), {}, result->nextMemCoeff};
}

Expected<SearchOutcome> ilp(const ir::Graph& graph, const std::vector<int>& ranks,
                            const cluster::Cluster& cluster, const SearchRequest& request) {
  auto fixed = rules::annotatedCuts(graph, request.overrides);
  if (!fixed) return fixed.error();
  SolveOptions options;
  options.timeLimitSeconds = request.timeLimitSeconds;
  // Unannotated, each repeated layer is decided once (layer_fold.h), as propagation does.
  auto folded = foldForSearch(graph, SearchMode::kIlp, fixed->empty() && !request.tieLayers);
  if (!folded) return folded.error();
  const std::optional<LayerFold>& fold = *folded;
  const ir::Graph& searched = fold ? fold->graph : graph;
  auto result = searchIlp(searched, ranks, cluster, *request.costModel, *fixed,
                          request.memoryLimitBytes, options, request.enableAllToAll,
                          request.tieLayers, fold ? fold->copies : OpCopies{});
  if (!result) return result.error();
  if (fold) result->cuts = unfoldCuts(*fold, result->cuts);
  const auto sources = searchSources(graph, *fixed, request);
  auto sharding = rules::shardGraphWithCuts(graph, ranks, result->cuts, sources);
  if (!sharding) return sharding.error();
  SearchOutcome outcome{std::move(*sharding), {}, {}};
  if (fold) outcome.explanation = fold->summary;
  outcome.explanation.push_back(
      fmt::format("ilp: {} ops, {} strategies, objective {} ns, lower bound {:.0f} ns, {}",
                  searched.ops().size(), result->variables, result->solve.evaluation.cost,
                  result->solve.lowerBound, result->solve.status));
  if (result->memoryLimitDropped) {
    outcome.explanation.push_back(fmt::format(
        "ilp: no assignment keeps parameter states and kept activations within {:.2f} GiB a "
        "device; solved for time alone",
        static_cast<double>(request.memoryLimitBytes) / static_cast<double>(int64_t{1} << 30)));
  }
  return outcome;
}

}  // namespace

std::string_view searchModeName(SearchMode mode) {
  for (const auto& [candidate, name] : kModeNames) {
    if (candidate == mode) return name;
  }
  return "unknown";
}

Expected<SearchMode> parseSearchMode(std::string_view name) {
  for (const auto& [mode, candidate] : kModeNames) {
    if (candidate == name) return mode;
  }
  return Error{
      fmt::format("unknown search mode '{}'; expected data_parallel, semi_auto, "
                  "sharding_propagation, recursive_programming or ilp",
                  name)};
}

Expected<SearchOutcome> searchStrategies(const ir::Graph& graph, const std::vector<int>& ranks,
                                         const cluster::Cluster& cluster,
                                         const SearchRequest& request) {
  // Propagation and the ILP check the graph they search, which may be folded (above).
  if (request.mode != SearchMode::kShardingPropagation && request.mode != SearchMode::kIlp) {
    if (auto status = checkSearchSize(graph, request.mode); !status) return status.error();
  }
  switch (request.mode) {
    case SearchMode::kDataParallel:
      return dataParallel(graph, ranks);
    case SearchMode::kSemiAuto: {
      auto sharding = rules::shardGraph(graph, ranks, request.overrides);
      if (!sharding) return sharding.error();
      return SearchOutcome{std::move(*sharding), {}, {}};
    }
    case SearchMode::kShardingPropagation:
      return propagation(graph, ranks, cluster, request);
    case SearchMode::kRecursiveProgramming:
      return recursive(graph, ranks, cluster, request);
    case SearchMode::kIlp:
      return ilp(graph, ranks, cluster, request);
  }
  return Error{"unknown search mode"};
}

}  // namespace autopar::search
