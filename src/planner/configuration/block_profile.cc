#include "planner/configuration/block_profile.h"

#include <fmt/format.h>

#include <algorithm>

#include "cluster/collective.h"
#include "cost/constants.h"
#include "cost/parameters.h"

namespace autopar::planner {

namespace {

search::StateBytes minus(const search::StateBytes& a, const search::StateBytes& b) {
  return {a.weights - b.weights, a.gradients - b.gradients, a.optimizer - b.optimizer};
}

search::StateBytes clamped(const search::StateBytes& state) {
  return {std::max<int64_t>(state.weights, 0), std::max<int64_t>(state.gradients, 0),
          std::max<int64_t>(state.optimizer, 0)};
}

/// Differences of probe stages: what a layer or an end adds.
ProbeStage minus(const ProbeStage& a, const ProbeStage& b) {
  return {a.forwardSeconds - b.forwardSeconds,
          a.backwardSeconds - b.backwardSeconds,
          a.optimizerSeconds - b.optimizerSeconds,
          a.sendSeconds,
          minus(a.state, b.state),
          minus(a.expertState, b.expertState),
          a.activationBytes - b.activationBytes,
          std::max(a.bufferBytes, b.bufferBytes),
          a.keptOutputBytes};
}

/// The weight-gradient matmuls do about the forward's work (as sim/step_estimate.cc takes it).
double weightGradientSeconds(const search::ProfiledPart& part) {
  return std::min(part.forwardSeconds, part.backwardSeconds / 2);
}

/// A profiled part from a probe difference; negative differences (rounding) clamp to zero.
search::ProfiledPart partOf(const ProbeStage& d) {
  search::ProfiledPart part;
  part.forwardSeconds = std::max(d.forwardSeconds, 0.0);
  part.backwardSeconds = std::max(d.backwardSeconds, 0.0);
  part.optimizerSeconds = std::max(d.optimizerSeconds, 0.0);
  part.state = clamped(d.state);
  part.expertState = clamped(d.expertState);
  part.activationBytes = std::max<int64_t>(d.activationBytes, 0);
  part.recomputedActivationBytes = part.activationBytes;
  part.weightGradientSeconds = weightGradientSeconds(part);
  return part;
}

/// Per stage, the state of the parameters split over expert parallelism: those with fewer
/// replicas than the probe's DP x CP ranks (the probe runs DP = EP, so the experts' weights have
/// CP replicas and every other parameter at least DP x CP).
std::vector<search::StateBytes> expertStatePerStage(const ConfigEstimate& estimate,
                                                    int64_t dataReplicas) {
  const Evaluated& evaluated = estimate.evaluated;
  const auto& options = evaluated.evaluateOptions;
  std::vector<search::StateBytes> perStage(evaluated.estimate.stages.size());
  for (const cost::ParameterPlacement& placement : evaluated.report.parameters) {
    if (placement.replicas >= dataReplicas) continue;
    const auto state = cost::placedStateBytes(evaluated.model.graph, placement,
                                              options.optimizerParallel, options.optimizer);
    const int stage = options.stageOfOp.empty()
                          ? 0
                          : options.stageOfOp.at(static_cast<size_t>(placement.firstConsumer));
    search::StateBytes& sum = perStage.at(static_cast<size_t>(stage) % perStage.size());
    sum.weights += state.weight;
    sum.gradients += state.gradient;
    sum.optimizer += state.optimizer;
  }
  return perStage;
}

}  // namespace

BlockProfiler::BlockProfiler(MegatronConfig base, frontend::TransformerConfig transformer,
                             std::optional<ProfileTable> measured)
    : base_(std::move(base)),
      transformer_(std::move(transformer)),
      measured_(std::move(measured)) {}

void BlockProfiler::applyMeasured(const BlockSetting& setting, search::BlockProfile& profile) {
  if (!measured_) return;
  BlockSetting measuredAs = setting;
  measuredAs.bf16Optimizer = false;
  auto it = measured_->entries.find(measuredAs);
  if (it == measured_->entries.end()) return;
  ++measuredSettings_;
  const MeasuredBlocks& blocks = it->second;
  const auto put = [](const MeasuredPart& measured, search::ProfiledPart& part) {
    part.forwardSeconds = measured.forwardSeconds;
    part.backwardSeconds = measured.backwardSeconds;
    part.weightGradientSeconds = weightGradientSeconds(part);
    part.activationBytes = measured.activationBytes;
    part.recomputeSeconds = measured.recomputeSeconds.value_or(part.recomputeSeconds);
    part.recomputedActivationBytes =
        measured.recomputedActivationBytes.value_or(part.recomputedActivationBytes);
  };
  const std::vector<std::string> names = profile.layers.size() == 2
                                             ? std::vector<std::string>{"vit", "llm"}
                                             : std::vector<std::string>{"llm"};
  for (size_t k = 0; k < names.size(); ++k) {
    if (auto layer = blocks.layers.find(names[k]); layer != blocks.layers.end()) {
      put(layer->second, profile.layers[k]);
    }
  }
  if (blocks.first) put(*blocks.first, profile.first);
  if (blocks.last) put(*blocks.last, profile.last);
}

std::vector<int64_t> BlockProfiler::stacks() const {
  if (transformer_.vision.layers > 0) return {transformer_.vision.layers, transformer_.layers};
  return {transformer_.layers};
}

Expected<std::vector<ProbeStage>> BlockProfiler::probe(const ProbeKey& key) {
  if (auto it = probes_.find(key); it != probes_.end()) return it->second;
  const auto& [setting, perStage] = key;
  MegatronConfig small = base_;
  small.nodes = 0;  // as many as two stages of TP x CP need
  small.tp = setting.tp;
  small.cp = setting.cp;
  small.sequenceParallel = setting.sequenceParallel;
  small.ep = setting.ep;
  small.mbs = setting.mbs;
  small.pp = 2;
  small.dp = setting.ep;
  small.vpp = 1;
  small.gbs = 2 * setting.mbs * setting.ep;
  small.zero = 0;
  small.schedule = ir::Schedule::k1F1B;
  small.recompute = setting.recompute;
  // The probe runs ZeRO 0 on a pipeline, which under bf16 is DeepSpeed's BF16_Optimizer; a
  // configuration that does not run it keeps its gradients as DeepSpeed's ZeRO does, in bf16.
  if (small.codePath.bf16Optimizer && small.precision == "bf16" && !setting.bf16Optimizer) {
    small.codePath.bf16Optimizer = false;
    small.codePath.gradReduceInBf16 = true;
  }
  // The probe is a measuring device (two pipeline stages to tell the ends from the layers), not
  // a configuration the framework must run: it keeps the framework's code path but not its
  // limits (FSDP has no pipeline parallelism).
  small.framework = cost::Framework::kMegatronCore;
  small.transformer = transformer_;
  small.transformer->layers = 2 * perStage;
  const bool vision = transformer_.vision.layers > 0;
  small.transformer->vision.layers = vision ? perStage : 0;
  // Stage 0: the vision layers and the first half of the LLM's; stage 1: the rest.
  const search::StackCounts layers = vision
                                         ? search::StackCounts{{perStage, 0}, {perStage, perStage}}
                                         : search::StackCounts{{perStage, perStage}};
  applyPlacement(layers, search::zerosLike(layers), small);
  auto estimate = estimateConfig(small);
  if (!estimate) {
    return estimate.error().in(fmt::format("block probe ({} layers per stage)", perStage));
  }
  deviceBytes_ = estimate->cluster.device.memoryBytes;
  const std::vector<search::StateBytes> experts =
      expertStatePerStage(*estimate, small.dp * small.cp);
  std::vector<ProbeStage> stages;
  for (size_t s = 0; s < estimate->evaluated.estimate.stages.size(); ++s) {
    const auto& stage = estimate->evaluated.estimate.stages[s];
    const auto& memory = stage.memory;
    const int64_t inFlight = std::max(stage.peakInFlight, 1);
    const search::StateBytes all{memory.parameterBytes, memory.gradientBytes,
                                 memory.optimizerBytes};
    stages.push_back({stage.forwardSeconds, stage.backwardSeconds, stage.optimizerSeconds,
                      stage.sendSeconds, minus(all, experts[s]), experts[s],
                      (memory.activationBytes - memory.keptOutputBytes) / inFlight,
                      memory.communicationBytes + memory.workspaceBytes,
                      estimate->evaluated.report.stages[s].keptOutputBytes});
  }
  return probes_.emplace(key, std::move(stages)).first->second;
}

Expected<search::BlockProfile> BlockProfiler::profile(const BlockSetting& setting) {
  if (auto it = profiles_.find(setting); it != profiles_.end()) return it->second;
  BlockSetting full = setting;
  full.recompute = ir::Recompute::kFull;
  std::vector<ProbeStage> probed[4];  // small, large, small recomputed, large recomputed
  const ProbeKey probes[4] = {{setting, 1}, {setting, 2}, {full, 1}, {full, 2}};
  for (int i = 0; i < 4; ++i) {
    auto stages = probe(probes[i]);
    if (!stages) return stages.error();
    probed[i] = std::move(*stages);
  }
  const auto& [small, large, smallFull, largeFull] = probed;
  const bool vision = transformer_.vision.layers > 0;
  // Stage 1 grows by one LLM layer; stage 0 by one LLM layer and, with a vision tower, one ViT
  // layer.
  const ProbeStage llm = minus(large[1], small[1]);
  const ProbeStage llmFull = minus(largeFull[1], smallFull[1]);
  const ProbeStage vit = minus(minus(large[0], small[0]), llm);
  const ProbeStage vitFull = minus(minus(largeFull[0], smallFull[0]), llmFull);
  search::BlockProfile profile;
  const auto layerOf = [](const ProbeStage& kept, const ProbeStage& full) {
    search::ProfiledPart part = partOf(kept);
    part.recomputeSeconds = std::max(full.backwardSeconds - kept.backwardSeconds, 0.0);
    part.recomputedActivationBytes = std::max<int64_t>(full.activationBytes, 0);
    return part;
  };
  if (vision) profile.layers.push_back(layerOf(vit, vitFull));
  profile.layers.push_back(layerOf(llm, llmFull));
  profile.first = partOf(vision ? minus(minus(small[0], llm), vit) : minus(small[0], llm));
  profile.last = partOf(minus(small[1], llm));
  profile.sendSeconds = small[0].sendSeconds;
  profile.keptBoundaryBytes = small[0].keptOutputBytes;
  profile.keptHeadBytes = small[1].keptOutputBytes;
  for (const auto& stages : probed) {
    for (const ProbeStage& stage : stages) {
      profile.bufferBytes = std::max(profile.bufferBytes, stage.bufferBytes);
    }
  }
  applyMeasured(setting, profile);
  return profiles_.emplace(setting, profile).first->second;
}

Expected<search::BlockProfile> BlockProfiler::profileOf(const MegatronConfig& config) {
  // Full recompute is a per-layer choice on the no-recompute profile.
  return profile({config.tp, config.cp, config.ep, config.sequenceParallel, config.mbs,
                  config.recompute == ir::Recompute::kSelective ? ir::Recompute::kSelective
                                                                : ir::Recompute::kNone,
                  config.bf16OptimizerRuns()});
}

void applyPlacement(const search::StackCounts& layers, const search::StackCounts& recomputed,
                    MegatronConfig& config) {
  config.placement.clear();
  const auto stages = static_cast<size_t>(config.pp);
  const size_t virtualStages = layers.front().size();
  const bool interleaved = virtualStages > stages;
  // Virtual stage v runs on stage v mod P as its chunk v / P.
  const auto place = [&](std::string block, size_t v, bool recompute) {
    ir::BlockSettings settings;
    settings.pipelineStage = static_cast<int>(v % stages);
    if (interleaved) settings.pipelineSegment = static_cast<int>(v / stages);
    settings.recompute = recompute;
    config.placement.push_back({std::move(block), settings});
  };
  place("embedding", 0, false);
  place("head", virtualStages - 1, false);
  const char* names[] = {"vit", "llm"};
  for (size_t k = 0; k < layers.size(); ++k) {
    const char* stack = names[k + 2 - layers.size()];  // one stack is the LLM
    int64_t layer = 0;
    for (size_t v = 0; v < virtualStages; ++v) {
      for (int64_t i = 0; i < layers[k][v]; ++i, ++layer) {
        place(fmt::format("{}.layer.{}", stack, layer), v, i < recomputed[k][v]);
      }
    }
  }
}

search::AnalyticCandidate candidateOf(const MegatronConfig& config) {
  search::AnalyticCandidate candidate;
  candidate.stages = config.pp;
  candidate.virtualStages = config.vpp;
  candidate.microBatches = config.microBatches();
  candidate.dp = config.dp * config.cp;  // the parameters' replicas
  candidate.expertDp = config.dp * config.cp / config.ep;
  candidate.zero = config.zeroAsRun();  // as the full model runs it
  candidate.gradientBucketBytes = gradientBucketBytes(config);
  candidate.overlapParameterGather = config.codePath.overlapParamGather;
  candidate.gradientsAllReduced = config.zeroAllReducesGradients();
  // BF16_Optimizer keeps the bf16 gradient beside the fp32 one and reduces the bf16 cast.
  const cost::OptimizerSpec gradients = cost::optimizerSpecOf(config);
  const int64_t weightBytes = ir::dtypeBytes(ir::DType::kBF16);
  candidate.gradientSyncFraction =
      static_cast<double>(gradients.reducedGradientBytes(weightBytes)) /
      static_cast<double>(gradients.heldGradientBytes(weightBytes));
  candidate.schedule = config.schedule;
  return candidate;
}

search::StackCounts screenLayers(const MegatronConfig& config, const search::BlockProfile& profile,
                                 const std::vector<int64_t>& stacks) {
  if (stacks.size() == 1) return search::evenLayers(stacks, config.pp, config.vpp);
  return search::balancedLayers(stacks, profile, config.pp);
}

Expected<search::AnalyticEstimate> closedFormEstimate(const MegatronConfig& config,
                                                      BlockProfiler& profiler,
                                                      const cluster::Cluster& cluster,
                                                      search::StackCounts layers,
                                                      search::StackCounts recomputed) {
  auto profile = profiler.profileOf(config);
  if (!profile) return profile.error();
  search::AnalyticCandidate candidate = candidateOf(config);
  candidate.layers =
      layers.empty() ? screenLayers(config, *profile, profiler.stacks()) : std::move(layers);
  if (!recomputed.empty()) {
    candidate.recomputed = std::move(recomputed);
  } else {
    candidate.recomputed = config.recompute == ir::Recompute::kFull
                               ? candidate.layers
                               : search::zerosLike(candidate.layers);
  }
  // Ranks in Megatron-Core's tp-cp-ep-dp order: DP x CP replicas TP apart; an expert's replicas
  // are the DP ranks EP apart, each with its CP ranks.
  std::vector<int> ranks;
  std::vector<int> expertRanks;
  for (int64_t d = 0; d < config.dp; ++d) {
    for (int64_t c = 0; c < config.cp; ++c) {
      const auto rank = static_cast<int>((d * config.cp + c) * config.tp);
      ranks.push_back(rank);
      if (d % config.ep == 0) expertRanks.push_back(rank);
    }
  }
  auto sync = [&](int64_t bytes, search::ReplicaGroup group) {
    const auto& members = group == search::ReplicaGroup::kExpertData ? expertRanks : ranks;
    return cluster::collectiveCost(cluster, cluster::Collective::kAllReduce, members, bytes)
        .seconds;
  };
  search::AnalyticEstimate estimate = search::estimateAnalytic(*profile, candidate, sync);
  // The same runtime reserve the full model adds (runtimeReserveBytes).
  for (size_t s = 0; s < estimate.peakBytes.size(); ++s) {
    const search::StateBytes& state = estimate.stateBytes[s];
    int64_t& peak = estimate.peakBytes[s];
    peak += runtimeReserveBytes(
        config,
        transientStageBytes(config.codePath, peak, state.weights, state.gradients, state.optimizer),
        *config.costModel);
  }
  return estimate;
}

Expected<std::optional<search::Placement>> placeOnClosedForm(const MegatronConfig& config,
                                                             BlockProfiler& profiler) {
  if (config.pp < 2 || config.recompute == ir::Recompute::kFull)
    return std::optional<search::Placement>{};
  auto profile = profiler.profileOf(config);
  if (!profile) return profile.error();
  // The placement fills what the full model leaves: the device less --memory-margin and the
  // runtime's fixed reserve, each byte the step allocates and frees counted with the
  // allocator's reserve over it (runtimeReserveBytes). Its state counts once, gradients
  // included, which the full model counts as transient outside a contiguous buffer: a placement
  // can come out a little over there, and the full model then says so.
  const int64_t budget = std::max<int64_t>(profiler.deviceBytes() - config.memoryMarginBytes -
                                               runtimeReserveBytes(config, 0, *config.costModel),
                                           0);
  auto problem = search::placementProblemOf(*profile, candidateOf(config), profiler.stacks(),
                                            budget, 1.0 + config.costModel->allocatorReserve);
  if (!problem) return problem.error();
  auto placement = search::placeLayers(*problem);
  if (!placement) return placement.error();
  return std::optional<search::Placement>{std::move(*placement)};
}

Expected<PlacedEstimate> evaluatePlaced(const MegatronConfig& config, search::Placement placement) {
  MegatronConfig placed = config;
  applyPlacement(placement.layers, placement.recomputed, placed);
  auto estimate = estimateConfig(placed);
  if (!estimate) return estimate.error();
  return PlacedEstimate{std::move(placed), std::move(*estimate), std::move(placement)};
}

Expected<std::optional<PlacedEstimate>> placeConfiguration(const MegatronConfig& config,
                                                           BlockProfiler& profiler) {
  auto placement = placeOnClosedForm(config, profiler);
  if (!placement) return placement.error();
  if (!*placement) return std::optional<PlacedEstimate>{};
  auto placed = evaluatePlaced(config, std::move(**placement));
  if (!placed) return placed.error();
  return std::optional<PlacedEstimate>{std::move(*placed)};
}

}  // namespace autopar::planner
