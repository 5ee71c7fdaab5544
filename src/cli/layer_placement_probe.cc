#include "cli/layer_placement_probe.h"

#include <fmt/format.h>

#include <algorithm>

namespace autopar::cli {

namespace {

/// One stage's measured figures for one micro-batch (and the device's memory).
struct StageFigures {
  double seconds = 0;  ///< forward + backward
  double backwardSeconds = 0;
  int64_t staticBytes = 0;
  int64_t activationBytes = 0;  ///< one micro-batch
  int64_t bufferBytes = 0;      ///< communication buffers
  int64_t deviceBytes = 0;
};

/// The model cut to `layers` layers on two stages, with the given recompute.
Expected<std::vector<StageFigures>> probe(const MegatronConfig& config,
                                          const frontend::TransformerConfig& transformer,
                                          int64_t layers, const std::string& recompute) {
  MegatronConfig small = config;
  small.pp = 2;
  small.vpp = 1;
  small.recompute = recompute;
  small.stages.clear();
  small.recomputeBlocks.clear();
  small.transformer = transformer;
  small.transformer->layers = layers;
  auto estimate = estimateConfig(small);
  if (!estimate) return estimate.error().in(fmt::format("layer probe ({} layers)", layers));
  std::vector<StageFigures> figures;
  for (const auto& stage : estimate->evaluated.estimate.stages) {
    const auto& memory = stage.memory;
    const int64_t inFlight = std::max(stage.peakInFlight, 1);
    figures.push_back({stage.forwardSeconds + stage.backwardSeconds, stage.backwardSeconds,
                       memory.parameterBytes + memory.gradientBytes + memory.optimizerBytes,
                       memory.activationBytes / inFlight, memory.communicationBytes,
                       estimate->cluster.device.memoryBytes});
  }
  return figures;
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

Expected<search::PlacementProblem> probePlacementProblem(
    const MegatronConfig& config, const frontend::TransformerConfig& transformer) {
  auto two = probe(config, transformer, 2, config.recompute);
  if (!two) return two.error();
  auto four = probe(config, transformer, 4, config.recompute);
  if (!four) return four.error();
  auto fourFull = probe(config, transformer, 4, "full");
  if (!fourFull) return fourFull.error();
  auto twoFull = probe(config, transformer, 2, "full");
  if (!twoFull) return twoFull.error();
  const StageFigures& a = (*two)[0];
  const StageFigures& b = (*four)[0];  // one more layer on each stage than `two`
  search::PlacementProblem problem;
  problem.layers = transformer.layers;
  problem.stages = config.pp;
  problem.microBatches = config.gbs / (config.dp * config.mbs);
  auto& layer = problem.layer;
  layer.forwardSeconds = (b.seconds - a.seconds) - (b.backwardSeconds - a.backwardSeconds);
  layer.backwardSeconds = b.backwardSeconds - a.backwardSeconds;
  layer.recomputeSeconds = std::max(
      ((*fourFull)[0].backwardSeconds - (*twoFull)[0].backwardSeconds) - layer.backwardSeconds,
      0.0);
  // Communication buffers (gathered parameters included) count with the static bytes: the part
  // that grows with the layers per layer, the rest with the ends.
  layer.staticBytes = (b.staticBytes + b.bufferBytes) - (a.staticBytes + a.bufferBytes);
  layer.activationBytes = b.activationBytes - a.activationBytes;
  layer.recomputedActivationBytes = (*fourFull)[0].activationBytes - (*twoFull)[0].activationBytes;
  const double perLayer = layer.forwardSeconds + layer.backwardSeconds;
  problem.first = {a.seconds - perLayer, a.staticBytes + a.bufferBytes - layer.staticBytes,
                   a.activationBytes - layer.activationBytes};
  const StageFigures& z = (*two)[1];
  problem.last = {z.seconds - perLayer, z.staticBytes + z.bufferBytes - layer.staticBytes,
                  z.activationBytes - layer.activationBytes};
  problem.memoryLimitBytes = a.deviceBytes;
  return problem;
}

Expected<std::optional<PlacedEstimate>> placeConfiguration(
    const MegatronConfig& config, const frontend::TransformerConfig& transformer) {
  if (config.pp < 2 || config.vpp > 1 || config.recompute == "full" || transformer.layers < 4) {
    return std::optional<PlacedEstimate>{};
  }
  auto problem = probePlacementProblem(config, transformer);
  if (!problem) return problem.error();
  auto placement = search::placeLayers(*problem);
  if (!placement) return std::optional<PlacedEstimate>{};
  MegatronConfig placed = config;
  applyPlacement(*placement, placed);
  auto estimate = estimateConfig(placed);
  if (!estimate) return estimate.error();
  return std::optional<PlacedEstimate>{
      PlacedEstimate{std::move(placed), std::move(*estimate), std::move(*placement)}};
}

}  // namespace autopar::cli
