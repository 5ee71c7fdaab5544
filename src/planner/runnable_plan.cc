#include "planner/runnable_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "frontend/graph_json.h"
#include "plan/plan_json.h"
#include "plan/validate.h"
#include "planner/inputs.h"

namespace autopar::planner {

namespace {

/// Shards every op over its stage's ranks: stage s runs on the plan's ranks (stage 0's) shifted
/// by s times the ranks per stage.
Expected<rules::GraphSharding> stagedSharding(const plan::Plan& plan, const ir::Graph& graph) {
  int stages = 1;
  for (const auto& op : plan.ops) stages = std::max(stages, op.stage + 1);
  std::vector<int> stageRanks = plan.ranks;
  if (stageRanks.empty()) {
    stageRanks.resize(static_cast<size_t>(plan.devices));
    std::iota(stageRanks.begin(), stageRanks.end(), 0);
  }
  if (static_cast<int64_t>(stageRanks.size()) * stages != plan.devices) {
    return Error{
        fmt::format("ranks: {} ranks per stage times {} stages is not the plan's {} "
                    "devices",
                    stageRanks.size(), stages, plan.devices)};
  }
  std::map<std::string, layout::Strategy> strategies;
  for (const auto& op : plan.ops) strategies[op.name] = op.strategy;
  rules::GraphSharding staged;
  for (int stage = 0; stage < stages; ++stage) {
    std::vector<int> ranks = stageRanks;
    for (int& rank : ranks) rank += stage * static_cast<int>(stageRanks.size());
    auto sharding = rules::shardGraph(graph, ranks, strategies);
    if (!sharding) return sharding.error();
    if (stage == 0) {
      staged = std::move(*sharding);
      continue;
    }
    for (size_t op = 0; op < plan.ops.size(); ++op) {
      if (plan.ops[op].stage == stage) staged.ops[op] = sharding->ops[op];
    }
  }
  return staged;
}

/// The graph with every block's pipeline stage set to its ops' stage in the plan; empty for a
/// plan of one stage, or one whose block spans stages.
std::optional<ir::Graph> withPlannedStages(const ir::Graph& graph, const plan::Plan& plan) {
  std::map<std::string, int> stages;
  for (const plan::OpRecord& op : plan.ops) {
    if (op.block.empty()) continue;
    const auto [at, inserted] = stages.emplace(op.block, op.stage);
    if (!inserted && at->second != op.stage) return std::nullopt;
  }
  if (plan.pipeline.stages <= 1 || stages.empty()) return std::nullopt;
  ir::Graph staged = graph;
  for (const auto& [block, stage] : stages) {
    ir::BlockSettings settings;
    settings.pipelineStage = stage;
    if (!staged.setBlockSettings(block, settings)) return std::nullopt;
  }
  return staged;
}

/// Per data-parallel replica, its samples of each micro-batch; empty for an even split.
std::vector<int64_t> batchSharesOf(const plan::Plan& plan) {
  std::vector<int64_t> shares;
  for (int64_t share : plan.dataParallelShares) {
    shares.push_back(share / std::max(plan.pipeline.microBatches, 1));
  }
  return shares;
}

/// Rebuilds the graph the plan was made from (see loadRunnablePlan).
Expected<ir::Graph> rebuildGraph(const plan::Plan& plan) {
  ModelOptions base;
  base.microBatch = plan.inputs.microBatch;
  base.sequence = plan.inputs.sequence;
  // Uneven data-parallel shares: the graph holds a micro-batch of every replica's share.
  const std::vector<int64_t> shares = batchSharesOf(plan);
  if (!shares.empty()) base.graphBatch = std::accumulate(shares.begin(), shares.end(), int64_t{0});
  std::vector<ModelOptions> tries{base};
  if (plan.setup) {
    // The plan says how it was annotated: build that first.
    ModelOptions annotated = base;
    annotated.parallel = static_cast<const ir::ParallelConfig&>(*plan.setup);
    tries.insert(tries.begin(), annotated);
  }
  for (int64_t tp = 1; tp <= plan.devices; ++tp) {
    if (plan.devices % tp != 0) continue;  // (a stage's devices divide the plan's)
    for (bool sequenceParallel : {false, true}) {
      ModelOptions options = base;
      options.parallel = ir::ParallelConfig{.tp = tp, .sequenceParallel = sequenceParallel};
      options.dataParallelFromDevices = true;
      tries.push_back(options);
    }
  }
  const int64_t devices =
      plan.ranks.empty() ? plan.devices : static_cast<int64_t>(plan.ranks.size());
  std::string firstError;
  for (const ModelOptions& options : tries) {
    // A pipelined plan's graph is one stage's micro-batch: built for one stage's devices.
    auto model = loadModel(plan.inputs.model, options, devices);
    if (!model) {
      if (firstError.empty()) firstError = model.error().message;
      continue;
    }
    if (plan::fingerprint(frontend::graphToJson(model->graph).dump()) == plan.inputs.modelHash) {
      return std::move(model->graph);
    }
    // A plan whose every block was placed by hand (--stage, or a placement exported from a
    // search across device groups) was built with each block's stage in the graph.
    if (auto staged = withPlannedStages(model->graph, plan);
        staged &&
        plan::fingerprint(frontend::graphToJson(*staged).dump()) == plan.inputs.modelHash) {
      return std::move(*staged);
    }
  }
  if (!firstError.empty()) return Error{fmt::format("inputs.model: {}", firstError)};
  return Error{
      fmt::format("inputs.model_hash: no build of {} matches the plan's fingerprint {}; "
                  "the model file changed since the plan was made",
                  plan.inputs.model, plan.inputs.modelHash)};
}

/// The runtime has a kernel for every op kind but Opaque (an ONNX op autopar does not know,
/// planned replicated): refused here, naming the op, before any rank starts.
Status checkRunnable(const ir::Graph& graph) {
  for (const ir::Op& op : graph.ops()) {
    if (op.kind != ir::OpKind::kOpaque) continue;
    return Error{fmt::format(
        "op '{}' (ONNX {}): autopar plans an op it does not know replicated, but cannot run it",
        op.name, op.attrs.opaqueType)};
  }
  return {};
}

}  // namespace

Expected<RunnablePlan> loadRunnablePlan(const std::string& path) {
  auto plan = plan::readPlanFile(path);
  if (!plan) return plan.error();
  auto graph = rebuildGraph(*plan);
  if (!graph) return graph.error().in(path);
  if (auto runnable = checkRunnable(*graph); !runnable) return runnable.error().in(path);
  if (auto status = plan::validatePlan(*plan, *graph, plan->devices); !status) {
    return status.error().in(path);
  }
  // The cluster only prices redistribution steps here; as many nodes as devices always suffice.
  auto cluster = loadCluster(plan->inputs.cluster, static_cast<int>(plan->devices),
                             static_cast<int>(plan->devices));
  if (!cluster) return cluster.error().in(path);
  auto sharding = stagedSharding(*plan, *graph);
  if (!sharding) return sharding.error().in(path);
  std::vector<int> opStage;
  std::vector<int> opChunk;
  int stages = 1;
  for (const auto& op : plan->ops) {
    opStage.push_back(op.stage);
    opChunk.push_back(op.chunk);
    stages = std::max(stages, op.stage + 1);
  }
  std::vector<int64_t> batchShares = batchSharesOf(*plan);
  return RunnablePlan{std::move(*plan),     std::move(*graph),     std::move(*cluster),
                      std::move(*sharding), std::move(opStage),    stages,
                      std::move(opChunk),   std::move(batchShares)};
}

Expected<RunnablePlan> loadRunnableGraph(const std::string& path, const std::string& clusterName,
                                         int world) {
  auto model = loadModel(path, {}, world);
  if (!model) return model.error();
  if (auto runnable = checkRunnable(model->graph); !runnable) return runnable.error().in(path);
  auto cluster = loadCluster(clusterName, world, world);
  if (!cluster) return cluster.error();
  std::vector<int> ranks(static_cast<size_t>(world));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto sharding = rules::shardGraph(model->graph, ranks);
  if (!sharding) return sharding.error().in(path);
  plan::Plan plan;
  plan.devices = world;
  return RunnablePlan{std::move(plan),
                      std::move(model->graph),
                      std::move(*cluster),
                      std::move(*sharding),
                      {},
                      1,
                      {},
                      {}};
}

}  // namespace autopar::planner
