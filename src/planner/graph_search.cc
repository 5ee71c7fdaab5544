#include "planner/graph_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ir/setting.h"

namespace autopar::planner {

namespace {

/// Bounds the micro-batches a --gbs may ask for (the simulator's events grow with them).
constexpr int64_t kMaxMicroBatches = 4096;

std::vector<GraphCandidate> candidatesOf(int64_t devices, int64_t blocks, int64_t microBatches) {
  std::vector<GraphCandidate> candidates;
  const int64_t deepest = std::max<int64_t>(std::min(blocks, microBatches), 1);
  for (int64_t stages = 1; stages <= deepest; ++stages) {
    if (devices % stages != 0) continue;
    for (ir::Schedule schedule : {ir::Schedule::k1F1B, ir::Schedule::kZeroBubbleH1}) {
      if (stages == 1 && schedule == ir::Schedule::kZeroBubbleH1) continue;
      for (ir::Recompute recompute : {ir::Recompute::kNone, ir::Recompute::kFull}) {
        // Full recompute needs blocks to recompute.
        if (blocks == 0 && recompute == ir::Recompute::kFull) continue;
        candidates.push_back({static_cast<int>(stages), schedule, recompute});
      }
    }
  }
  return candidates;
}

int64_t stackBlocks(const ir::Graph& graph) {
  std::set<std::string> blocks;
  for (const ir::Op& op : graph.ops()) {
    if (ir::isStackLayer(op.block)) blocks.insert(op.block);
  }
  return static_cast<int64_t>(blocks.size());
}

/// The graph's batch: its first input's leading dim (0 when it has no input).
int64_t graphBatch(const ir::Graph& graph) {
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (tensor.role == ir::TensorRole::kInput && !tensor.type.shape.empty()) {
      return tensor.type.shape.front();
    }
  }
  return 0;
}

PlanOptions optionsOf(const GraphSearchRequest& request, const GraphCandidate& candidate,
                      int64_t microBatches) {
  PlanOptions options;
  options.model = request.model;
  options.cluster = request.cluster;
  options.nodes = request.nodes;
  options.search = request.opSearch == OpSearch::kMegatron ? search::SearchMode::kSemiAuto
                                                           : searchModeOf(request.opSearch);
  options.ilpTimeLimit = request.ilpTimeLimit;
  options.ilpTieLayers = true;  // every block of a stack shares one decision
  options.setup.pp = candidate.stages;
  options.training.microBatches = static_cast<int>(microBatches);
  options.setup.schedule = candidate.schedule;
  options.setup.recompute = candidate.recompute;
  return options;
}

}  // namespace

Expected<GraphSearch> searchGraph(const GraphSearchRequest& request) {
  auto cluster = loadCluster(request.cluster, request.nodes, 0, request.devicesPerNode);
  if (!cluster) return cluster.error();
  auto model = loadModel(request.model, {}, cluster->numDevices);
  if (!model) return model.error();
  GraphSearch found;
  found.cluster = *cluster;
  found.opSearch = request.opSearch;
  found.blocks = stackBlocks(model->graph);
  found.batch = graphBatch(model->graph);
  if (request.globalBatch <= 0 || found.batch <= 0 || request.globalBatch % found.batch != 0 ||
      request.globalBatch / found.batch > kMaxMicroBatches) {
    return Error{fmt::format(
        "{}: expected a multiple of the graph's batch {} (its first input's dim 0: one "
        "micro-batch), at most {} micro-batches",
        ir::flag(ir::Setting::kGbs, request.globalBatch), found.batch, kMaxMicroBatches)};
  }
  found.microBatches = request.globalBatch / found.batch;
  const std::vector<GraphCandidate> candidates =
      candidatesOf(cluster->numDevices, found.blocks, found.microBatches);
  for (const GraphCandidate& candidate : candidates) {
    if (request.progress) {
      request.progress(found.evaluated + found.skipped, static_cast<int>(candidates.size()));
    }
    const PlanOptions options = optionsOf(request, candidate, found.microBatches);
    // The graph was read once; each configuration evaluates a copy.
    auto evaluated = evaluateModel(*model, options, *cluster);
    if (!evaluated) {
      if (found.firstError.empty()) found.firstError = evaluated.error().message;
      ++found.skipped;
      continue;
    }
    ++found.evaluated;
    const RankedGraphCandidate ranked{candidate, evaluated->estimate.stepSeconds,
                                      evaluated->peakBytes()};
    if (ranked.peakBytes > cluster->device.memoryBytes) {
      if (!found.leanest || ranked.peakBytes < found.leanest->peakBytes) found.leanest = ranked;
      continue;
    }
    found.ranked.push_back(ranked);
  }
  if (found.evaluated == 0) {
    return Error{found.firstError.empty() ? "no configuration to search" : found.firstError};
  }
  std::stable_sort(found.ranked.begin(), found.ranked.end(),
                   [](const auto& a, const auto& b) { return a.stepSeconds < b.stepSeconds; });
  if (found.ranked.empty()) return found;
  found.bestOptions = optionsOf(request, found.ranked.front().candidate, found.microBatches);
  auto best = evaluateModel(std::move(*model), found.bestOptions, *cluster);
  if (!best) return best.error();
  found.best = std::move(*best);
  return found;
}

std::string graphNothingFitsAdvice(const GraphSearch& found) {
  const std::string leanest =
      found.leanest
          ? fmt::format("the leanest ({} stages, recompute {}) needs {} per device of {}",
                        found.leanest->candidate.stages, found.leanest->candidate.recompute,
                        formatBytes(found.leanest->peakBytes),
                        formatBytes(found.cluster.device.memoryBytes))
          : "no configuration could be evaluated";
  return fmt::format(
      "nothing fits: {}; add devices (--nodes) or shard the largest parameters with a --op-search",
      leanest);
}

}  // namespace autopar::planner
