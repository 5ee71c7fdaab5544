#pragma once
/// \file
/// Semi-auto sharding of a whole graph: every op takes its strategy from, in order, an override
/// (the CLI's --shard OP=STRATEGY), its own annotation (graph JSON "shard", or a builder's
/// Megatron-style annotation), or the default data-parallel strategy (the batch factor cut).
/// This is MindSpore's semi_auto_parallel mode: what the user did not annotate runs data parallel.

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "layout/strategy.h"
#include "rules/sharded_op.h"
#include "util/expected.h"

namespace autopar::rules {

/// Where an op's strategy came from, for reports.
enum class StrategySource { kOverride, kAnnotation, kDefault, kSearch };

struct GraphSharding {
  std::vector<ShardedOp> ops;                ///< indexed by OpId
  std::vector<StrategySource> sources;       ///< indexed by OpId
  std::vector<layout::Strategy> strategies;  ///< the seeds' notation, indexed by OpId
};

/// Shards every op of `graph` over `ranks`. Fails on an override naming an unknown op, or a
/// strategy that does not fit its op; the message starts with the op's name.
Expected<GraphSharding> shardGraph(const ir::Graph& graph, const std::vector<int>& ranks,
                                   const std::map<std::string, layout::Strategy>& overrides = {});

/// The strategies the user gave (overrides, then annotations) as factor cuts, by OpId. Fails like
/// shardGraph on unknown ops and strategies that do not fit.
Expected<std::map<ir::OpId, FactorCuts>> annotatedCuts(
    const ir::Graph& graph, const std::map<std::string, layout::Strategy>& overrides = {});

/// Shards every op with the given factor cuts (indexed by OpId), e.g. a search's result;
/// `sources` says where each came from.
Expected<GraphSharding> shardGraphWithCuts(const ir::Graph& graph, const std::vector<int>& ranks,
                                           const std::vector<FactorCuts>& cuts,
                                           const std::vector<StrategySource>& sources);

}  // namespace autopar::rules
