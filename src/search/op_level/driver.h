#pragma once
/// \file
/// The search driver: turns a graph, its devices and the user's choices into a strategy for every
/// op, by one of MindSpore's parallel modes:
///   - data_parallel (parallel_mode 0): every op cuts its batch factor; annotations are ignored;
///   - semi_auto (parallel_mode 1): annotated ops keep their strategy, the rest run data parallel;
///   - sharding_propagation (parallel_mode 2): annotations spread to every other op;
///   - recursive_programming (parallel_mode 2): the double-recursive search, no annotations needed.
/// After the search a verifier applies every strategy through the rules, so an invalid result is
/// an error here rather than a wrong plan later.

#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "cost/constants.h"
#include "ir/graph.h"
#include "layout/strategy.h"
#include "rules/graph_sharding.h"
#include "search/op_level/propagation.h"
#include "util/expected.h"

namespace autopar::search {

enum class SearchMode {
  kDataParallel,
  kSemiAuto,
  kShardingPropagation,
  kRecursiveProgramming,
  kIlp,
};

/// "data_parallel", "semi_auto", "sharding_propagation", "recursive_programming", "ilp".
std::string_view searchModeName(SearchMode mode);
Expected<SearchMode> parseSearchMode(std::string_view name);

struct SearchRequest {
  SearchMode mode = SearchMode::kSemiAuto;
  std::map<std::string, layout::Strategy> overrides;  ///< --shard OP=STRATEGY
  double memCoeff = 0.1;  ///< recursive_programming: seed 000's mem_coeff
  bool explain = false;   ///< keep the search's decision log
  bool enableAllToAll = false;
  /// ilp: device memory for parameters' states and kept activations (< 0: none), and CBC's time.
  int64_t memoryLimitBytes = -1;
  double timeLimitSeconds = 60;
  bool tieLayers = false;  ///< ilp: the layers of each stack share one decision
  /// The constants the searches price ops with (cost/constants.h).
  cost::CostModel costModel = cost::shippedCostModel();
};

struct SearchOutcome {
  rules::GraphSharding sharding;
  std::vector<std::string> explanation;  ///< the search's decisions, one line each
  std::vector<Conflict> conflicts;       ///< sharding_propagation
  /// recursive_programming: RecursiveResult::nextMemCoeff; infinity for the other modes.
  double nextMemCoeff = std::numeric_limits<double>::infinity();
};

Expected<SearchOutcome> searchStrategies(const ir::Graph& graph, const std::vector<int>& ranks,
                                         const cluster::Cluster& cluster,
                                         const SearchRequest& request);

}  // namespace autopar::search
