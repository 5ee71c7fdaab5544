#include "cli/block_profile.h"

#include <fmt/format.h>

#include <algorithm>

#include "cluster/collective.h"

namespace autopar::cli {

namespace {

search::StateBytes minus(const search::StateBytes& a, const search::StateBytes& b) {
  return {a.weights - b.weights, a.gradients - b.gradients, a.optimizer - b.optimizer};
}

/// `stage` less one layer: what an end adds.
search::ProfiledPart endOf(const ProbeStage& stage, const search::ProfiledPart& layer) {
  search::ProfiledPart end;
  end.forwardSeconds = std::max(stage.forwardSeconds - layer.forwardSeconds, 0.0);
  end.backwardSeconds = std::max(stage.backwardSeconds - layer.backwardSeconds, 0.0);
  end.optimizerSeconds = std::max(stage.optimizerSeconds - layer.optimizerSeconds, 0.0);
  end.state = minus(stage.state, layer.state);
  end.activationBytes = std::max<int64_t>(stage.activationBytes - layer.activationBytes, 0);
  end.recomputedActivationBytes = end.activationBytes;
  return end;
}

/// Block assignments and recomputed blocks for a placement of "llm.layer.<i>" layers.
void applyPlacement(const search::Placement& placement, MegatronConfig& config) {
  config.stages.clear();
  config.recomputeBlocks.clear();
  config.stages.push_back("embedding=0");
  config.stages.push_back(fmt::format("head={}", placement.layers.size() - 1));
  int64_t layer = 0;
  for (size_t s = 0; s < placement.layers.size(); ++s) {
    for (int64_t i = 0; i < placement.layers[s]; ++i, ++layer) {
      config.stages.push_back(fmt::format("llm.layer.{}={}", layer, s));
      if (i < placement.recomputed[s]) {
        config.recomputeBlocks.push_back(fmt::format("llm.layer.{}", layer));
      }
    }
  }
}

}  // namespace

BlockProfiler::BlockProfiler(MegatronConfig base, frontend::TransformerConfig transformer)
    : base_(std::move(base)), transformer_(std::move(transformer)) {}

Expected<std::vector<ProbeStage>> BlockProfiler::probe(const ProbeKey& key) {
  if (auto it = probes_.find(key); it != probes_.end()) return it->second;
  const auto& [tp, sequenceParallel, mbs, recompute, layers] = key;
  MegatronConfig small = base_;
  small.nodes = 0;  // as many as two stages of TP need
  small.tp = tp;
  small.sequenceParallel = sequenceParallel;
  small.mbs = mbs;
  small.pp = 2;
  small.dp = 1;
  small.vpp = 1;
  small.gbs = 2 * mbs;
  small.zero = 0;
  small.recompute = recompute;
  small.stages.clear();
  small.recomputeBlocks.clear();
  small.transformer = transformer_;
  small.transformer->layers = layers;
  auto estimate = estimateConfig(small);
  if (!estimate) return estimate.error().in(fmt::format("block probe ({} layers)", layers));
  deviceBytes_ = estimate->cluster.device.memoryBytes;
  std::vector<ProbeStage> stages;
  for (const auto& stage : estimate->evaluated.estimate.stages) {
    const auto& memory = stage.memory;
    const int64_t inFlight = std::max(stage.peakInFlight, 1);
    stages.push_back(
        {stage.forwardSeconds, stage.backwardSeconds, stage.optimizerSeconds, stage.sendSeconds,
         search::StateBytes{memory.parameterBytes, memory.gradientBytes, memory.optimizerBytes},
         memory.activationBytes / inFlight, memory.communicationBytes});
  }
  return probes_.emplace(key, std::move(stages)).first->second;
}

Expected<search::BlockProfile> BlockProfiler::profile(int64_t tp, bool sequenceParallel,
                                                      int64_t mbs, const std::string& recompute) {
  const ProfileKey key{tp, sequenceParallel, mbs, recompute};
  if (auto it = profiles_.find(key); it != profiles_.end()) return it->second;
  auto two = probe({tp, sequenceParallel, mbs, recompute, 2});
  if (!two) return two.error();
  auto four = probe({tp, sequenceParallel, mbs, recompute, 4});
  if (!four) return four.error();
  auto twoFull = probe({tp, sequenceParallel, mbs, "full", 2});
  if (!twoFull) return twoFull.error();
  auto fourFull = probe({tp, sequenceParallel, mbs, "full", 4});
  if (!fourFull) return fourFull.error();
  const ProbeStage& a = (*two)[0];
  const ProbeStage& b = (*four)[0];  // one more layer on stage 0 than `two`
  search::BlockProfile profile;
  auto& layer = profile.layer;
  layer.forwardSeconds = b.forwardSeconds - a.forwardSeconds;
  layer.backwardSeconds = b.backwardSeconds - a.backwardSeconds;
  layer.recomputeSeconds = std::max(
      ((*fourFull)[0].backwardSeconds - (*twoFull)[0].backwardSeconds) - layer.backwardSeconds,
      0.0);
  layer.optimizerSeconds = b.optimizerSeconds - a.optimizerSeconds;
  layer.state = minus(b.state, a.state);
  layer.activationBytes = b.activationBytes - a.activationBytes;
  layer.recomputedActivationBytes = (*fourFull)[0].activationBytes - (*twoFull)[0].activationBytes;
  profile.first = endOf(a, layer);
  profile.last = endOf((*two)[1], layer);
  profile.sendSeconds = a.sendSeconds;
  for (const auto* probed : {&*two, &*four, &*twoFull, &*fourFull}) {
    for (const ProbeStage& stage : *probed) {
      profile.bufferBytes = std::max(profile.bufferBytes, stage.bufferBytes);
    }
  }
  return profiles_.emplace(key, profile).first->second;
}

Expected<search::BlockProfile> BlockProfiler::profileOf(const MegatronConfig& config) {
  return profile(config.tp, config.sequenceParallel, config.mbs,
                 config.recompute == "selective" ? "selective" : "none");
}

Expected<search::AnalyticEstimate> closedFormEstimate(const MegatronConfig& config,
                                                      BlockProfiler& profiler,
                                                      const cluster::Cluster& cluster) {
  auto profile = profiler.profileOf(config);
  if (!profile) return profile.error();
  search::AnalyticCandidate candidate;
  candidate.stages = config.pp;
  candidate.virtualStages = config.vpp;
  candidate.microBatches = config.gbs / (config.dp * config.mbs);
  candidate.dp = config.dp;
  candidate.zero = config.zero;
  candidate.schedule =
      config.vpp > 1 ? search::PipelineSchedule::kInterleaved : search::PipelineSchedule::k1F1B;
  candidate.layers = search::evenLayers(profiler.transformer().layers, config.pp, config.vpp);
  candidate.recomputed = config.recompute == "full"
                             ? candidate.layers
                             : std::vector<int64_t>(candidate.layers.size(), 0);
  std::vector<int> ranks;
  for (int64_t d = 0; d < config.dp; ++d) ranks.push_back(static_cast<int>(d * config.tp));
  auto sync = [&](int64_t bytes) {
    return cluster::collectiveCost(cluster, cluster::Collective::kAllReduce, ranks, bytes).seconds;
  };
  return search::estimateAnalytic(*profile, candidate, sync);
}

search::PlacementProblem placementProblem(const search::BlockProfile& profile,
                                          const MegatronConfig& config, int64_t layers,
                                          int64_t deviceBytes) {
  const auto sharded = [&](const search::ProfiledPart& part) {
    return part.state.sharded(config.zero, config.dp);
  };
  search::PlacementProblem problem;
  problem.layers = layers;
  problem.stages = config.pp;
  problem.microBatches = config.gbs / (config.dp * config.mbs);
  const auto& l = profile.layer;
  problem.layer = {l.forwardSeconds, l.backwardSeconds, l.recomputeSeconds,
                   sharded(l),       l.activationBytes, l.recomputedActivationBytes};
  const auto end = [&](const search::ProfiledPart& part) {
    return search::StageExtra{part.forwardSeconds + part.backwardSeconds, sharded(part),
                              part.activationBytes};
  };
  problem.first = end(profile.first);
  problem.last = end(profile.last);
  problem.memoryLimitBytes = deviceBytes - profile.bufferBytes;
  return problem;
}
Expected<std::optional<PlacedEstimate>> placeConfiguration(const MegatronConfig& config,
                                                           BlockProfiler& profiler) {
  const int64_t layers = profiler.transformer().layers;
  if (config.pp < 2 || config.vpp > 1 || config.recompute == "full" || layers < 4) {
    return std::optional<PlacedEstimate>{};
  }
  auto profile = profiler.profileOf(config);
  if (!profile) return profile.error();
  auto placement =
      search::placeLayers(placementProblem(*profile, config, layers, profiler.deviceBytes()));
  if (!placement) return std::optional<PlacedEstimate>{};
  MegatronConfig placed = config;
  applyPlacement(*placement, placed);
  auto estimate = estimateConfig(placed);
  if (!estimate) return estimate.error();
  return std::optional<PlacedEstimate>{
      PlacedEstimate{std::move(placed), std::move(*estimate), std::move(*placement)}};
}

}  // namespace autopar::cli
