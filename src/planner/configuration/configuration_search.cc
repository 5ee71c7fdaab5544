#include "planner/configuration/configuration_search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "ir/setting.h"
#include "planner/configuration/block_profile.h"
#include "planner/configuration/profile_table.h"
#include "planner/inputs.h"

namespace autopar::planner {

using Setting = ir::Setting;

namespace {

/// Whether a lower ZeRO stage the framework runs runs `setup` exactly as its own stage does
/// (under bf16 and a pipeline DeepSpeed's BF16_Optimizer runs ZeRO 0 and 1 alike): the search
/// lists such a configuration once, at the lower stage, as DeepSpeed's config writes it.
bool repeatsALowerStage(const ir::TrainingSetup& setup) {
  for (int lower = 0; lower < setup.zero; ++lower) {
    ir::TrainingSetup as = setup;
    as.zero = lower;
    if (cost::frameworkProfile(setup.framework).can.runsZero(lower) &&
        as.zeroAsRun() == setup.zeroAsRun() &&
        as.bf16OptimizerRuns() == setup.bf16OptimizerRuns() &&
        as.zeroAllReducesGradients() == setup.zeroAllReducesGradients() &&
        as.fp32Gradients() == setup.fp32Gradients()) {
      return true;
    }
  }
  return false;
}

/// Fits, but its memory band straddles the usable memory.
bool isTight(const ConfigEstimate& estimate) {
  return estimate.fits() && estimate.verdict() == MemoryVerdict::kTight;
}

/// How much faster the closed form must find a candidate's exact placement than its even split
/// for the search to evaluate only the placed plan: several times the closed form's error against
/// the full model (within 2% on the leaders, docs/hybrid-search.md).
constexpr double kClearPlacementGain = 0.05;

MegatronConfig configOf(const MegatronConfig& base, const search::HybridCandidate& candidate) {
  MegatronConfig config = base;
  static_cast<ir::ParallelConfig&>(config) = candidate;
  return config;
}

/// One search: the model, the cluster, the block profiler and the evaluators over them.
class SearchRun {
 public:
  SearchRun(const SearchRequest& request, frontend::TransformerConfig transformer,
            cluster::Cluster cluster, std::optional<ProfileTable> table)
      : request_(request),
        transformer_(std::move(transformer)),
        cluster_(std::move(cluster)),
        base_(baseOf(request, transformer_, cluster_)),
        oracle_(oracleOf(request, transformer_, cluster_)),
        profiler_(base_, transformer_, std::move(table)) {}

  Expected<ConfigurationSearch> run(const SearchProgress& progress);

 private:
  static MegatronConfig baseOf(const SearchRequest& request,
                               const frontend::TransformerConfig& transformer,
                               const cluster::Cluster& cluster) {
    MegatronConfig base = request.base;
    base.nodes = std::max(request.base.nodes, 1);
    base.transformer = transformer;  // read once, not again for every evaluation
    // Refined under Megatron-LM's annotation; the op-level search then re-shards the ranked
    // (rerankWithOpSearch).
    base.opSearch = OpSearch::kMegatron;
    return base;
  }
  static std::shared_ptr<BlockShardingOracle> oracleOf(const SearchRequest& request,
                                                       const frontend::TransformerConfig& model,
                                                       const cluster::Cluster& cluster) {
    if (request.base.opSearch == OpSearch::kMegatron) return nullptr;
    frontend::TransformerConfig probed = model;
    probed.dtype = parsePrecision(request.base.precision).value();  // checked by the caller
    probed.attention = request.base.codePath.attention;
    probed.loss = request.base.codePath.loss;
    return std::make_shared<BlockShardingOracle>(std::move(probed), cluster,
                                                 request.base.costModel);
  }
  /// Each ranked configuration evaluated again with its blocks sharded by the op-level search
  /// (the faster of its sharding and Megatron's, planner/configuration/configuration_estimate.h),
  /// then ranked again. Re-sharding the configurations Megatron's refinement ranked, rather than
  /// refining under the op search, keeps every one of them a candidate: the winner is never slower
  /// than the megatron mode's. Returns how many configurations it evaluated.
  Expected<int> rerankWithOpSearch(search::HybridResult& result);
  /// Whether the search may pick `schedule` (SearchRequest::schedules).
  [[nodiscard]] bool scheduleAllowed(ir::Schedule schedule) const;
  [[nodiscard]] search::HybridModel model() const;
  [[nodiscard]] bool vision() const { return transformer_.vision.layers > 0; }
  /// The closed form of a configuration (measured blocks where the table has them).
  Expected<search::AnalyticEstimate> closedForm(const MegatronConfig& config,
                                                search::StackCounts layers = {},
                                                search::StackCounts recomputed = {});
  Expected<search::HybridScore> screen(const search::HybridCandidate& candidate);
  /// The configuration with its layers as the screen placed them: evenly for an LLM (the full
  /// model's default), by time with a vision tower.
  Expected<MegatronConfig> withLayers(const search::HybridCandidate& candidate);
  /// The full model's score of the candidate as split by withLayers and as placed exactly
  /// (search/layer_level/layer_placement.h), whichever is faster; with a measured table, the closed
  /// form's (the full model does not read the table). Remembers what it found in refined_.
  Expected<search::HybridScore> refine(const search::HybridCandidate& candidate);
  /// The step of an evaluated configuration: the full model's, or with a measured table the
  /// closed form's.
  Expected<double> stepOf(const MegatronConfig& config, const ConfigEstimate& estimate,
                          const search::Placement* placement);
  /// Places the candidate exactly (search/layer_level/layer_placement.h) and, when that changes its
  /// layers, evaluates the placed plan on the full model; keeps it in `refined` and `score` when it
  /// is faster (or only it fits).
  Status tryPlacement(const search::HybridCandidate& candidate, RefinedConfiguration& refined,
                      search::HybridScore& score);
  /// What placedFirst found: the placed plan's score when it stands for the candidate, or
  /// whether the full model found the placed plan over memory (so tryPlacement need not
  /// evaluate it again).
  struct PlacedFirst {
    std::optional<search::HybridScore> score;
    bool overMemory = false;
  };
  /// The placed plan alone, when the closed form puts the exact placement clearly ahead of the
  /// even split (kClearPlacementGain): its full-model evaluation stands for the candidate and the
  /// even split is not evaluated (at 800 layers every leader places 8-15% faster, and evaluating
  /// both doubled the search). No score when the placement is not clearly faster, is unchanged,
  /// or does not fit on the full model: refine then evaluates the even split, and the placement
  /// too unless it was found over memory here.
  Expected<PlacedFirst> placedFirst(const search::HybridCandidate& candidate);
  /// The candidate as the exact placement starts from: without full recompute, since the
  /// placement chooses how many layers each stage recomputes.
  [[nodiscard]] MegatronConfig toPlaceOf(const search::HybridCandidate& candidate) const;
  /// The report's line for a candidate's placement.
  static std::string placementLine(const MegatronConfig& config, const search::Placement& placement,
                                   double placedSeconds, const search::HybridCandidate& candidate,
                                   double unplacedSeconds, std::string_view unplacedNote = "");

  const SearchRequest& request_;
  frontend::TransformerConfig transformer_;
  cluster::Cluster cluster_;
  MegatronConfig base_;
  std::shared_ptr<BlockShardingOracle> oracle_;  ///< with an op-level search
  BlockProfiler profiler_;
  /// What refining each candidate found. (Not its estimate: that holds the whole graph; the
  /// winner's is evaluated again.)
  std::map<search::HybridCandidate, RefinedConfiguration> refined_;
};

search::HybridModel SearchRun::model() const {
  search::HybridModel model;
  model.layers = transformer_.layers + transformer_.vision.layers;
  model.tensorParallelExtents = frontend::tensorParallelExtents(transformer_);
  model.seq = request_.base.seq > 0 ? request_.base.seq : transformer_.seq;
  const auto& v = transformer_.vision;
  model.textTokens = model.seq - (vision() ? v.patches / (v.merge * v.merge) : 0);
  model.interleavable = !vision();
  model.experts = transformer_.experts;
  model.expertSlots =
      transformer_.experts > 0 ? model.seq * transformer_.topK / transformer_.experts : 0;
  return model;
}

Expected<search::AnalyticEstimate> SearchRun::closedForm(const MegatronConfig& config,
                                                         search::StackCounts layers,
                                                         search::StackCounts recomputed) {
  return closedFormEstimate(config, profiler_, cluster_, std::move(layers), std::move(recomputed));
}

Expected<search::HybridScore> SearchRun::screen(const search::HybridCandidate& candidate) {
  auto estimate = closedForm(configOf(base_, candidate));
  if (!estimate) return estimate.error();
  return search::HybridScore{
      estimate->stepSeconds, estimate->peak(),
      estimate->peak() <= usableMemoryBytes(cluster_, request_.base.memoryMarginBytes)};
}

Expected<MegatronConfig> SearchRun::withLayers(const search::HybridCandidate& candidate) {
  MegatronConfig config = configOf(base_, candidate);
  if (!vision()) return config;
  auto profile = profiler_.profileOf(config);
  if (!profile) return profile.error();
  const search::StackCounts layers = screenLayers(config, *profile, profiler_.stacks());
  applyPlacement(layers, search::zerosLike(layers), config);
  return config;
}

Expected<double> SearchRun::stepOf(const MegatronConfig& config, const ConfigEstimate& estimate,
                                   const search::Placement* placement) {
  if (!profiler_.hasTable()) return estimate.stepSeconds;
  auto measured =
      placement ? closedForm(config, placement->layers, placement->recomputed) : closedForm(config);
  if (!measured) return measured.error();
  return measured->stepSeconds;
}

MegatronConfig SearchRun::toPlaceOf(const search::HybridCandidate& candidate) const {
  MegatronConfig toPlace = configOf(base_, candidate);
  if (toPlace.recompute == ir::Recompute::kFull) toPlace.recompute = ir::Recompute::kNone;
  return toPlace;
}

Expected<SearchRun::PlacedFirst> SearchRun::placedFirst(const search::HybridCandidate& candidate) {
  // With a measured table the closed form ranks, and a vision tower is split by time first.
  if (candidate.pp == 1 || profiler_.hasTable() || vision()) return PlacedFirst{};
  const MegatronConfig toPlace = toPlaceOf(candidate);
  auto placement = placeOnClosedForm(toPlace, profiler_);
  if (!placement || !*placement) return PlacedFirst{};  // refine's tryPlacement reports it
  auto even = closedForm(configOf(base_, candidate));
  if (!even) return even.error();
  const search::Placement& layout = **placement;
  if (layout.stepSeconds > even->stepSeconds * (1 - kClearPlacementGain)) return PlacedFirst{};
  auto placed = evaluatePlaced(toPlace, layout);
  if (!placed) return placed.error();
  if (!placed->estimate.fits()) return PlacedFirst{{}, true};
  const double seconds = placed->estimate.stepSeconds;
  RefinedConfiguration refined{placed->config, seconds, true, "", false};
  refined.placementLine = placementLine(toPlace, layout, seconds, candidate, even->stepSeconds,
                                        " in closed form, not evaluated");
  refined_.insert_or_assign(candidate, std::move(refined));
  return PlacedFirst{
      search::HybridScore{seconds, placed->estimate.peakBytes(), true, isTight(placed->estimate)}};
}

Expected<search::HybridScore> SearchRun::refine(const search::HybridCandidate& candidate) {
  auto first = placedFirst(candidate);
  if (!first) return first.error();
  if (first->score) return *first->score;
  auto config = withLayers(candidate);
  if (!config) return config.error();
  auto estimate = estimateConfig(*config);
  if (!estimate) return estimate.error();
  auto seconds = stepOf(*config, *estimate, nullptr);
  if (!seconds) return seconds.error();
  RefinedConfiguration refined{*config, *seconds, false, "", false};
  search::HybridScore score{*seconds, estimate->peakBytes(), estimate->fits(), isTight(*estimate)};
  if (!first->overMemory) {
    if (Status status = tryPlacement(candidate, refined, score); !status) return status.error();
  }
  refined_.insert_or_assign(candidate, std::move(refined));
  return score;
}

Status SearchRun::tryPlacement(const search::HybridCandidate& candidate,
                               RefinedConfiguration& refined, search::HybridScore& score) {
  const MegatronConfig toPlace = toPlaceOf(candidate);
  auto placement = placeOnClosedForm(toPlace, profiler_);
  if (!placement) {
    refined.placementLine =
        fmt::format("  {}: not placed: {}", ir::shapeName(toPlace), placement.error().message);
    return {};
  }
  if (!*placement) return {};
  auto profile = profiler_.profileOf(toPlace);
  if (!profile) return profile.error();
  // The placement the candidate was evaluated with needs no second evaluation.
  const search::Placement& layout = **placement;
  const bool unchanged = candidate.recompute != ir::Recompute::kFull &&
                         layout.recomputed == search::zerosLike(layout.recomputed) &&
                         layout.layers == screenLayers(toPlace, *profile, profiler_.stacks());
  if (unchanged) {
    refined.placementLine =
        placementLine(toPlace, layout, refined.seconds, candidate, refined.seconds);
    return {};
  }
  auto placed = evaluatePlaced(toPlace, layout);
  if (!placed) return placed.error();
  if (!placed->estimate.fits()) return {};
  auto seconds = stepOf(placed->config, placed->estimate, &placed->placement);
  if (!seconds) return seconds.error();
  refined.placementLine = placementLine(toPlace, layout, *seconds, candidate, refined.seconds);
  if (*seconds >= refined.seconds && score.fits) return {};
  refined.config = placed->config;
  refined.seconds = *seconds;
  refined.placed = true;
  score = {*seconds, placed->estimate.peakBytes(), true, isTight(placed->estimate)};
  return {};
}

std::string SearchRun::placementLine(const MegatronConfig& config,
                                     const search::Placement& placement, double placedSeconds,
                                     const search::HybridCandidate& candidate,
                                     double unplacedSeconds, std::string_view unplacedNote) {
  const auto& layers = placement.layers;
  const auto& recomputed = placement.recomputed;
  const std::string towers = layers.size() > 1 ? fmt::format("ViT [{}] recomputed [{}], LLM ",
                                                             fmt::join(layers.front(), ", "),
                                                             fmt::join(recomputed.front(), ", "))
                                               : "";
  return fmt::format("  {}: {}layers{} [{}], recomputed [{}]: {} (unplaced, {}: {}{})",
                     ir::shapeName(config), towers, config.vpp > 1 ? " per virtual stage" : "",
                     fmt::join(layers.back(), ", "), fmt::join(recomputed.back(), ", "),
                     formatSeconds(placedSeconds), ir::recomputeName(candidate.recompute),
                     formatSeconds(unplacedSeconds), unplacedNote);
}

Expected<int> SearchRun::rerankWithOpSearch(search::HybridResult& result) {
  // A measured table ranks on the closed form, which reads Megatron's blocks.
  if (!oracle_ || profiler_.hasTable()) return 0;
  for (auto& [candidate, score] : result.ranked) {
    RefinedConfiguration& refined = refined_.at(candidate);
    MegatronConfig config = refined.config;
    config.opSearch = request_.base.opSearch;
    config.blockOracle = oracle_;
    // Megatron's step of this configuration is the refined one (and it fits: it is ranked), so
    // only the op search's sharding is evaluated.
    auto estimate = estimateOpSearchSharding(config);
    if (!estimate) return estimate.error();
    if (!*estimate ||
        !prefersOpSearch((*estimate)->fits(), (*estimate)->stepSeconds, true, refined.seconds)) {
      continue;
    }
    refined.config = std::move(config);
    refined.seconds = (*estimate)->stepSeconds;
    refined.opSearchTaken = true;
    score.stepSeconds = (*estimate)->stepSeconds;
    score.peakBytes = (*estimate)->peakBytes();
    score.tight = isTight(**estimate);
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(), [](const auto& a, const auto& b) {
    return a.second.stepSeconds < b.second.stepSeconds;
  });
  return static_cast<int>(result.ranked.size());
}

bool SearchRun::scheduleAllowed(ir::Schedule schedule) const {
  const auto& given = request_.schedules;
  if (!given.empty()) return std::find(given.begin(), given.end(), schedule) != given.end();
  switch (schedule) {
    case ir::Schedule::k1F1B:
      return true;
    case ir::Schedule::kInterleaved:
      return cost::frameworkProfile(request_.base.framework).can.interleaved;
    case ir::Schedule::kZeroBubbleH1:
      return request_.zeroBubble;
    case ir::Schedule::kGPipe:
      return false;
  }
  return false;
}

Expected<ConfigurationSearch> SearchRun::run(const SearchProgress& progress) {
  search::HybridSpace space;
  space.world = cluster_.numDevices;
  space.devicesPerNode = cluster_.devicesPerNode;
  space.globalBatch = request_.base.gbs;
  space.admits = [this](const search::HybridCandidate& candidate) {
    if (candidate.pp > 1 && !scheduleAllowed(candidate.schedule)) return false;
    ir::TrainingSetup setup = request_.base;
    static_cast<ir::ParallelConfig&>(setup) = candidate;
    if (repeatsALowerStage(setup)) return false;
    return cost::checkRunnable(cost::frameworkProfile(request_.base.framework), candidate,
                               request_.base.precision, request_.base.frameworkRelease)
        .ok();
  };
  auto result = search::searchHybrid(
      model(), space, [this](const auto& c) { return screen(c); },
      [this](const auto& c) { return refine(c); }, request_.refinedCandidates, progress);
  if (!result) return result.error();
  auto reranked = rerankWithOpSearch(*result);
  if (!reranked) return reranked.error();
  ConfigurationSearch found;
  found.hybrid = std::move(*result);
  for (const auto& [candidate, score] : found.hybrid.ranked) {
    found.refined.push_back(refined_.at(candidate));
  }
  found.placedFaster = static_cast<int>(std::count_if(
      refined_.begin(), refined_.end(), [](const auto& entry) { return entry.second.placed; }));
  found.cluster = cluster_;
  found.transformer = transformer_;
  found.sequence = model().seq;
  found.probes = profiler_.probes();
  found.settings = profiler_.settings();
  found.measuredSettings = profiler_.measuredSettings();
  found.measured = profiler_.hasTable();
  found.opSearch = request_.base.opSearch;
  found.opSearchTaken =
      static_cast<int>(std::count_if(refined_.begin(), refined_.end(),
                                     [](const auto& entry) { return entry.second.opSearchTaken; }));
  found.opSearchEvaluated = *reranked;
  found.blockProbes = oracle_ ? oracle_->probes() : 0;
  if (found.refined.empty()) return found;
  const RefinedConfiguration& winner = found.refined.front();
  auto estimate = estimateConfig(winner.config);
  if (!estimate) return estimate.error();
  found.best = winner.config;
  found.estimate = std::move(*estimate);
  found.bestSeconds = winner.seconds;
  found.placedBest = winner.placed;
  return found;
}

}  // namespace

Expected<SampledDegrees> sampledDegrees(const std::string& model, int64_t devicesPerNode,
                                        int64_t globalBatch) {
  auto transformer = transformerConfigOf(model);
  if (!transformer) return transformer.error();
  search::HybridModel shape;
  shape.tensorParallelExtents = frontend::tensorParallelExtents(*transformer);
  SampledDegrees degrees{search::tensorParallelDegrees(shape, devicesPerNode), {}};
  for (int64_t size : search::HybridSpace{}.microBatchSizes) {
    if (size <= globalBatch) degrees.microBatches.push_back(size);
  }
  return degrees;
}

Expected<ConfigurationSearch> searchConfigurations(const SearchRequest& request,
                                                   const SearchProgress& progress) {
  if (request.base.gbs <= 0)
    return Error{ir::flag(Setting::kGbs) + ": required, a positive integer"};
  if (auto precision = parsePrecision(request.base.precision); !precision) {
    return precision.error();
  }
  auto transformer = transformerConfigOf(request.base.model);
  if (!transformer) return transformer.error();
  MegatronConfig whole = request.base;  // the whole cluster as one data-parallel group
  whole.nodes = std::max(request.base.nodes, 1);
  auto one = loadCluster(whole.cluster, whole.nodes, 0, whole.devicesPerNode);
  if (!one) return one.error();
  whole.dp = one->numDevices;
  auto cluster = clusterFor(whole);
  if (!cluster) return cluster.error();
  std::optional<ProfileTable> table;
  if (request.profilePath.empty() &&
      (request.samplingNodes > 0 || request.samplingDevicesPerNode > 0)) {
    using ir::flag;
    return Error{fmt::format(
        "{}/{}: name the cluster a {} table was measured on; give {} (the target cluster is {} "
        "and {})",
        flag(Setting::kNnodes), flag(Setting::kNprocPerNode), flag(Setting::kProfile),
        flag(Setting::kProfile), flag(Setting::kNodes), flag(Setting::kDevicesPerNode))};
  }
  if (!request.profilePath.empty()) {
    auto read = readProfileTable(request.profilePath, cluster->device.name, request.samplingNodes,
                                 request.samplingDevicesPerNode);
    if (!read) return read.error();
    table = std::move(*read);
  }
  SearchRun run(request, std::move(*transformer), std::move(*cluster), std::move(table));
  return run.run(progress);
}

std::string nothingFitsAdvice(const ConfigurationSearch& found, int nodes) {
  const auto& [leanest, score] = found.hybrid.leanest;
  const auto needed = static_cast<int64_t>(
      std::ceil(static_cast<double>(nodes) * static_cast<double>(score.peakBytes) /
                static_cast<double>(found.cluster.device.memoryBytes)));
  return fmt::format(
      "nothing fits: the leanest configuration (TP {} CP {} PP {} DP {} EP {}, recompute {}, ZeRO "
      "{}) needs {} per device of {}; about --nodes {} would fit it",
      leanest.tp, leanest.cp, leanest.pp, leanest.dp, leanest.ep,
      ir::recomputeName(leanest.recompute), leanest.zero, formatBytes(score.peakBytes),
      formatBytes(found.cluster.device.memoryBytes), std::max<int64_t>(needed, nodes + 1));
}

}  // namespace autopar::planner
