#pragma once
/// \file
/// `autopar search` on any model with repeated blocks: a graph JSON or ONNX model whose ops carry
/// block tags ("<stack>.<index>", e.g. "encoder.layer.3"). Every configuration of
///   - pipeline stages P over the blocks (1, and each divisor of the devices up to the blocks and
///     the micro-batches),
///   - the schedule (1F1B, and zero-bubble H1 when pipelined),
///   - recompute (none, or every block in full),
/// is evaluated on the full model (planner/plan_evaluation.h), each stage's ops sharded over its
/// devices by the op-level search (data parallelism is its batch cut): the file's annotations
/// with the rest data parallel (megatron, MindSpore's semi_auto), or sharding propagation, the
/// double-recursive search or the ILP. The graph holds one micro-batch (its batch is the first
/// input's dim 0), so the global batch fixes the micro-batches per step. The fastest step that
/// fits wins.
///
/// A graph with no block tags is one block: it is searched without pipelining, and the result
/// says so.
///
///   searchGraph({.model = "examples/graphs/vit_encoder.json", .cluster = "dgx-a100-80g",
///                .opSearch = OpSearch::kRecursiveProgramming, .globalBatch = 512})
///   -> 8 micro-batches of 64 on 8 A100s; best: 2 stages of 8 blocks, ZB-H1, no recompute (83.1 ms)

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "planner/op_search.h"
#include "planner/plan_evaluation.h"
#include "util/expected.h"

namespace autopar::planner {

struct GraphSearchRequest {
  std::string model;  ///< a graph JSON or ONNX file
  std::string cluster = "dgx-a100-80g";
  int nodes = 1;
  int devicesPerNode = 0;  ///< 0: the preset's
  OpSearch opSearch = OpSearch::kMegatron;
  /// Samples per step: a multiple of the graph's batch (its first input's dim 0); the quotient
  /// is the micro-batches per step.
  int64_t globalBatch = 0;
  double ilpTimeLimit = 60;  ///< --op-search ilp: seconds for CBC per evaluation
  /// Called before each configuration is evaluated, with those done and the total; it may throw
  /// to stop the search (the Python package's Ctrl-C).
  std::function<void(int done, int total)> progress;
};

struct GraphCandidate {
  int stages = 1;
  ir::Schedule schedule = ir::Schedule::k1F1B;     ///< 1F1B or zero-bubble H1
  ir::Recompute recompute = ir::Recompute::kNone;  ///< none or every block in full
};

struct RankedGraphCandidate {
  GraphCandidate candidate;
  double stepSeconds = 0;
  int64_t peakBytes = 0;
};

struct GraphSearch {
  std::vector<RankedGraphCandidate> ranked;  ///< those that fit, fastest first
  int evaluated = 0;
  int skipped = 0;     ///< configurations the model or the stage assignment refused
  int64_t blocks = 0;  ///< stack-layer blocks; 0: the graph is one block
  int64_t batch = 0;   ///< the graph's batch: samples per micro-batch
  int64_t microBatches = 0;
  OpSearch opSearch = OpSearch::kMegatron;  ///< who sharded each stage's ops
  std::string firstError;                   ///< the first refused configuration's reason
  /// The winner, evaluated again, with the options that made it (empty when nothing fits).
  std::optional<Evaluated> best;
  PlanOptions bestOptions;
  /// With nothing fitting: the configuration with the least peak memory.
  std::optional<RankedGraphCandidate> leanest;
  cluster::Cluster cluster;
};

/// Runs the search. Errors are bad input (the model, the cluster, --gbs) or a model every
/// configuration refuses (that reason), one line each.
Expected<GraphSearch> searchGraph(const GraphSearchRequest& request);

/// When nothing fits (`best` empty): the leanest configuration's need and what would help,
///   "nothing fits: the leanest (4 stages, recompute full) needs 91.2 GiB per device of 80 GiB;
///    add devices (--nodes) or shard the largest parameters with a --op-search"
std::string graphNothingFitsAdvice(const GraphSearch& found);

}  // namespace autopar::planner
