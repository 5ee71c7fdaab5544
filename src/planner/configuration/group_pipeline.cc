// A pipeline across two device groups (group_search.h, splitPipeline).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "frontend/transformer.h"
#include "planner/configuration/block_profile.h"
#include "planner/configuration/group_search.h"
#include "util/in_parallel.h"

namespace autopar::planner {

namespace {

/// The configuration's whole world of `group`'s device: its preset or spec over enough nodes.
void placeOn(MegatronConfig& config, const cluster::DeviceGroup& group) {
  const int64_t world = config.worldSize();
  placeOnGroup(config, group,
               static_cast<int>((world + group.devicesPerNode - 1) / group.devicesPerNode));
}

/// Layers per stage: `front` of them over the first `frontStages` stages, the rest over the
/// others, each as even as whole layers allow.
search::StackCounts splitLayers(int64_t layers, int64_t front, int frontStages, int stages) {
  std::vector<int64_t> counts;
  auto spread = [&](int64_t total, int parts) {
    for (int i = 0; i < parts; ++i) counts.push_back(total / parts + (i < total % parts ? 1 : 0));
  };
  spread(front, frontStages);
  spread(layers - front, stages - frontStages);
  return {counts};
}

/// The split evaluated: the configuration on each kind, their stages spliced, the step simulated.
Expected<SplitPipeline> evaluateSplit(const MegatronConfig& base,
                                      const cluster::ClusterGroups& groups, size_t front,
                                      size_t back, int frontStages,
                                      const search::StackCounts& layers, const CrossSync& link) {
  MegatronConfig config = base;
  applyPlacement(layers, search::zerosLike(layers), config);
  MegatronConfig onFront = config;
  placeOn(onFront, groups.groups[front]);
  MegatronConfig onBack = config;
  placeOn(onBack, groups.groups[back]);
  auto frontEstimate = estimateConfig(onFront);
  if (!frontEstimate) return frontEstimate.error();
  auto backEstimate = estimateConfig(onBack);
  if (!backEstimate) return backEstimate.error();
  SplitPipeline split;
  split.front = front;
  split.back = back;
  split.frontStages = frontStages;
  split.layers = layers.front();
  split.link = link.link;
  // Stage s's costs, memory and band are those of its own device.
  cost::CostReport report = frontEstimate->evaluated.report;
  for (size_t s = static_cast<size_t>(frontStages); s < report.stages.size(); ++s) {
    report.stages[s] = backEstimate->evaluated.report.stages[s];
  }
  // The activations crossing between the groups go over the link between them.
  cost::StageCost& last = report.stages[static_cast<size_t>(frontStages) - 1];
  const double crossing =
      link.latencySeconds + static_cast<double>(last.sendBytes) / link.bytesPerSecond;
  split.boundarySeconds = std::max(last.sendSeconds, crossing);
  last.sendSeconds = split.boundarySeconds;
  auto step = sim::estimateStep(report, frontEstimate->evaluated.pipeline);
  if (!step) return step.error();
  split.fits = true;
  for (size_t s = 0; s < report.stages.size(); ++s) {
    const ConfigEstimate& own =
        s < static_cast<size_t>(frontStages) ? *frontEstimate : *backEstimate;
    const int64_t usable = usableMemoryBytes(own.cluster, config.memoryMarginBytes);
    split.peakBytes.push_back(own.peakMemoryBytes[s]);
    split.deviceBytes.push_back(own.cluster.device.memoryBytes);
    split.fits = split.fits &&
                 fitsUnder(config.memoryPolicy, own.peakMemoryBytes[s], own.peakBands[s], usable);
  }
  // The simulated step with the stages' own memory (the runtime reserve included).
  for (size_t s = 0; s < step->stages.size(); ++s) {
    const ConfigEstimate& own =
        s < static_cast<size_t>(frontStages) ? *frontEstimate : *backEstimate;
    step->stages[s].memory = own.evaluated.estimate.stages[s].memory;
  }
  split.report = std::move(report);
  split.pipeline = frontEstimate->evaluated.pipeline;
  split.step = std::move(*step);
  split.config = std::move(config);
  split.sequence = frontEstimate->sequence;
  return split;
}

/// The configurations tried: every device of both groups used, TP within a node of either kind,
/// ZeRO 1 (the distributed optimizer) where the framework runs it, sequence parallelism with TP
/// where it has it, micro-batch 1 or 2, no recompute or full; each one the framework runs.
std::vector<MegatronConfig> shapes(const MegatronConfig& base, const cluster::DeviceGroup& front,
                                   const cluster::DeviceGroup& back, int64_t layers) {
  const cost::FrameworkProfile& profile = cost::frameworkProfile(base.framework);
  std::vector<MegatronConfig> configs;
  const int most = std::min(front.devicesPerNode, back.devicesPerNode);
  for (int64_t tp = 1; tp <= std::min(most, 8); tp *= 2) {
    for (int64_t dp = 1; tp * dp <= std::min(front.devices(), back.devices()); dp *= 2) {
      const int64_t perStage = tp * dp;
      if (front.devices() % perStage != 0 || back.devices() % perStage != 0) continue;
      const int64_t stages = (front.devices() + back.devices()) / perStage;
      if (stages > layers) continue;
      for (int64_t mbs : {1, 2}) {
        if (base.gbs % (dp * mbs) != 0) continue;
        for (ir::Recompute recompute : {ir::Recompute::kNone, ir::Recompute::kFull}) {
          MegatronConfig config = base;
          config.tp = tp;
          config.dp = dp;
          config.pp = stages;
          config.vpp = 1;
          config.cp = 1;
          config.mbs = mbs;
          config.sequenceParallel = tp > 1 && profile.can.sequenceParallel;
          config.recompute = recompute;
          config.zero = profile.can.runsZero(1) ? 1 : 0;
          config.schedule = ir::Schedule::k1F1B;
          if (!cost::checkRunnable(profile, config, config.precision, config.frameworkRelease)) {
            continue;
          }
          configs.push_back(config);
        }
      }
    }
  }
  return configs;
}

/// The front group's share of the layers that makes both kinds' stages take about as long: from
/// each kind's slowest stage per layer in `even` (an even split, spliced).
int64_t balancedFrontLayers(const SplitPipeline& even, int64_t layers) {
  const int stages = static_cast<int>(even.layers.size());
  double frontPerLayer = 0;
  double backPerLayer = 0;
  for (int s = 0; s < stages; ++s) {
    const cost::StageCost& cost = even.report.stages[static_cast<size_t>(s)];
    const double perLayer = (cost.forwardSeconds + cost.backwardSeconds) /
                            static_cast<double>(std::max<int64_t>(even.layers[s], 1));
    double& slot = s < even.frontStages ? frontPerLayer : backPerLayer;
    slot = std::max(slot, perLayer);
  }
  const double frontSpeed = even.frontStages / frontPerLayer;
  const double share = frontSpeed / (frontSpeed + (stages - even.frontStages) / backPerLayer);
  return std::clamp<int64_t>(std::llround(share * static_cast<double>(layers)), even.frontStages,
                             layers - (stages - even.frontStages));
}

/// One shape across the groups: its layers split evenly, then in proportion to the kinds'
/// speeds per layer; the faster that fits.
Expected<SplitPipeline> balancedSplit(const MegatronConfig& config,
                                      const cluster::ClusterGroups& groups, size_t front,
                                      size_t back, int64_t layers, const CrossSync& link) {
  const int frontStages =
      static_cast<int>(groups.groups[front].devices() / (config.tp * config.dp));
  const int stages = static_cast<int>(config.pp);
  const int64_t evenFront = layers * frontStages / stages;
  auto even = evaluateSplit(config, groups, front, back, frontStages,
                            splitLayers(layers, evenFront, frontStages, stages), link);
  if (!even) return even;
  const int64_t balanced = balancedFrontLayers(*even, layers);
  if (balanced == evenFront) return even;
  auto placed = evaluateSplit(config, groups, front, back, frontStages,
                              splitLayers(layers, balanced, frontStages, stages), link);
  if (!placed) return placed;
  const bool placedWins =
      placed->fits && (!even->fits || placed->step.stepSeconds <= even->step.stepSeconds);
  return placedWins ? placed : even;
}

}  // namespace

Expected<std::optional<SplitPipeline>> splitPipeline(const SearchRequest& request,
                                                     const cluster::ClusterGroups& groups,
                                                     size_t front, size_t back) {
  MegatronConfig base = request.base;
  auto transformer = transformerOf(base);
  if (!transformer) return transformer.error();
  if (transformer->vision.layers > 0 || transformer->experts > 1) {
    return std::optional<SplitPipeline>{};  // one text stack, no experts
  }
  base.transformer = *transformer;
  const int64_t layers = transformer->layers;
  auto link = crossGroupSync(groups, {front, back}, 0);
  if (!link) return link.error();
  const std::vector<MegatronConfig> configs =
      shapes(base, groups.groups[front], groups.groups[back], layers);
  auto tried = util::inParallelBatches(configs.size(), [&](size_t i) {
    return balancedSplit(configs[i], groups, front, back, layers, *link);
  });
  std::optional<SplitPipeline> best;
  for (auto& split : tried) {
    if (!split) return split.error();
    if (!split->fits) continue;
    if (!best || split->step.stepSeconds < best->step.stepSeconds) best = std::move(*split);
  }
  if (!best) return best;
  best->throughput =
      throughputOf(best->step.stepSeconds, static_cast<double>(base.gbs * best->sequence),
                   {&groups.groups[front], &groups.groups[back]});
  return best;
}

}  // namespace autopar::planner
