#pragma once
/// \file
/// A plan made runnable: the plan file read, the model it was made from rebuilt and checked
/// against the plan's fingerprint, and every op sharded over its pipeline stage's ranks (stage s
/// runs on the plan's ranks shifted by s times the ranks per stage). `autopar run` and `check`
/// execute this on ranks (src/runtime).

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "rules/graph_sharding.h"
#include "util/expected.h"

namespace autopar::planner {

struct RunnablePlan {
  plan::Plan plan;
  ir::Graph graph;
  cluster::Cluster cluster;
  rules::GraphSharding sharding;  ///< each op on its pipeline stage's ranks
  std::vector<int> opStage;
  int stages = 1;
  std::vector<int> opChunk;
  /// Per data-parallel replica, its samples of each micro-batch (the plan's shares over its
  /// micro-batches); empty when the batch splits evenly.
  std::vector<int64_t> batchShares;
};

/// Reads and validates a plan file and rebuilds its model. The plan records the model,
/// micro-batch and sequence but not `autopar plan`'s Megatron-style options (--tp, --dp,
/// --sequence-parallel), so those are tried in turn until the graph's fingerprint matches.
/// Errors name the file and the field ("p.json: inputs.model_hash: no build of ...").
Expected<RunnablePlan> loadRunnablePlan(const std::string& path);

/// A graph file run under its own annotations (semi-auto: unannotated ops data parallel) over
/// `world` ranks, one stage (what `autopar profile` runs).
Expected<RunnablePlan> loadRunnableGraph(const std::string& path, const std::string& clusterName,
                                         int world);

}  // namespace autopar::planner
