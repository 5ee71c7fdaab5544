#pragma once
/// \file
/// The op-level search as the layer-level search's cost oracle, as Alpa's stage profiling runs
/// the intra-operator pass for each stage and submesh: how one block of each kind is sharded on a
/// configuration's TP x CP submesh, chosen by sharding propagation, the double-recursive search
/// or the exact ILP (search/op_level/driver.h) instead of Megatron-LM's fixed annotation.
///
/// The oracle builds a probe of the model (one layer of each stack, its ends, one data-parallel
/// replica's micro-batch, no annotations), searches it on ranks 0 .. TP x CP - 1 of the
/// configuration's cluster, and keeps each op's factor cuts by its place in its block
/// (blockOpKeys). A stage's graph then takes, for every op, the cuts of its place with the batch
/// factor cut DP times more (liftBlockSharding): data parallelism stays outermost, as in
/// Megatron-LM's rank order. Results are cached per (TP, CP, micro-batch, sequence, mode).
///
/// Example: LLaMA with TP 2 and DP 4. Megatron-LM's own probe on the 2-device submesh cuts the
/// columns of q_proj, the second op of every layer (place "llm.layer.#1"), 2 ways; lifted to the
/// stage's graph, every layer's q_proj gets those cuts with its batch cut 4 ways, which is exactly
/// Megatron's TP 2 x DP 4 strategy (LiftBlockSharding.MegatronsProbeLiftsToMegatronsStageSharding
/// checks this for every op).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "cluster/cluster.h"
#include "cost/constants.h"
#include "frontend/transformer.h"
#include "ir/graph.h"
#include "rules/sharded_op.h"
#include "search/op_level/driver.h"
#include "util/expected.h"

namespace autopar::planner {

/// Who shards the blocks of a configuration: Megatron-LM's annotation (tensor, sequence, context
/// and expert parallel as the frontend builder writes them), or an op-level search.
enum class OpSearch { kMegatron, kShardingPropagation, kRecursiveProgramming, kIlp };

/// "megatron", "sharding_propagation", "recursive_programming", "ilp".
std::string_view opSearchName(OpSearch search);
/// The op-level search that runs `search` on a submesh (kMegatron, which annotates instead, maps
/// to the exact ILP: a probe of Megatron's annotation needs no search).
search::SearchMode searchModeOf(OpSearch search);
/// The error names the flag and the accepted names:
///   "--op-search: expected megatron, sharding_propagation, recursive_programming or ilp, got x"
Expected<OpSearch> parseOpSearch(std::string_view name);

/// Each op's place in the graph, the same for every layer of a stack: "<stack prefix>#<index of
/// the op within its block>" for ops of a stack layer (blocks "llm.layer.<i>": the 3rd op of
/// every LLM layer is "llm.layer.#2"), the op's name for the others (embedding, head).
std::vector<std::string> blockOpKeys(const ir::Graph& graph);

/// The op-level search's cuts for each place (blockOpKeys) on the submesh.
struct BlockSharding {
  std::map<std::string, rules::FactorCuts> cuts;
  int64_t submeshDevices = 1;  ///< TP x CP
  std::vector<std::string> explanation;
};

/// The cuts of every op of `graph` (by OpId): its place's cuts with the first batch factor cut
/// `dataParallel` times more. Fails naming the op when its place was not probed.
Expected<std::vector<rules::FactorCuts>> liftBlockSharding(const BlockSharding& sharding,
                                                           const ir::Graph& graph,
                                                           int64_t dataParallel);

/// What the search is asked on a submesh.
struct BlockShardingQuery {
  OpSearch search = OpSearch::kIlp;
  int64_t tp = 1;
  int64_t cp = 1;
  int64_t microBatch = 1;  ///< per data-parallel replica
  int64_t sequence = 0;
  auto operator<=>(const BlockShardingQuery&) const = default;
};

/// Probes and caches block shardings for one model on one cluster (one search's; not shared
/// between threads).
class BlockShardingOracle {
 public:
  /// `transformer` is the model (its dtype and dimensions as evaluated); `cluster` the cluster
  /// the configurations run on (its first TP x CP devices are the submesh); `costModel` the
  /// constants the probes price ops with.
  BlockShardingOracle(frontend::TransformerConfig transformer, cluster::Cluster cluster,
                      cost::CostModel costModel);

  /// The sharding for `query`, searched once and then read from the cache.
  Expected<std::shared_ptr<const BlockSharding>> shard(const BlockShardingQuery& query);

  [[nodiscard]] int probes() const;

 private:
  Expected<BlockSharding> probe(const BlockShardingQuery& query) const;

  frontend::TransformerConfig transformer_;
  cluster::Cluster cluster_;
  cost::CostModel costModel_;
  std::map<BlockShardingQuery, std::shared_ptr<const BlockSharding>> cache_;
};

}  // namespace autopar::planner
