/// `autopar search`: the multi-dimensional search (search/hybrid.h) over Megatron-style
/// configurations, each costed by `autopar estimate`. Prints the top configurations, the best
/// one's memory per stage and its Megatron-LM and MindSpore settings, and writes seed 003's
/// auto_parallel_search_optimal_config.json.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/block_profile.h"
#include "cli/megatron_estimate.h"
#include "cli/verbs.h"
#include "search/hybrid.h"

namespace autopar::cli {

namespace {

/// How many of the fastest screened configurations the full model evaluates again.
constexpr int kRefinedCandidates = 16;
/// How many of the leaders' placements the report lists.
constexpr int kPlacedCandidates = 8;

struct SearchArgs {
  MegatronConfig base;  ///< model, cluster, nodes, gbs, seq, precision, inter-node bandwidth
  int top = 10;
  std::string out = "auto_parallel_search_optimal_config.json";
  std::string costModel;
  bool json = false;
  std::string profile;    ///< a measured block table (docs/profile-table.md)
  int samplingNodes = 0;  ///< the cluster the table was measured on (0: the table's)
  int samplingDevicesPerNode = 0;
};

MegatronConfig configOf(const MegatronConfig& base, const search::HybridCandidate& candidate) {
  MegatronConfig config = base;
  config.tp = candidate.tp;
  config.cp = candidate.cp;
  config.ep = candidate.ep;
  config.pp = candidate.pp;
  config.dp = candidate.dp;
  config.vpp = candidate.vpp;
  config.zeroBubble = candidate.zeroBubble;
  config.mbs = candidate.mbs;
  config.sequenceParallel = candidate.sequenceParallel;
  config.recompute = candidate.recompute;
  config.zero = candidate.zero;
  return config;
}

/// Seed 003's result file: parallel_config, layer_placement, layer_recompute, e2e_time (ms) and
/// throughput (tokens per second per device). Without a vision tower its lists are zeros.
nlohmann::ordered_json optimalConfigJson(const MegatronConfig& config,
                                         const ConfigEstimate& estimate, double stepSeconds) {
  const auto [layers, recomputed] = layersPerStage(estimate, config.pp, "llm");
  const auto [vision, visionRecomputed] = layersPerStage(estimate, config.pp, "vit");
  return {{"parallel_config",
           {{"PP", config.pp},
            {"TP", config.tp},
            {"DP", config.dp},
            {"MBS", config.mbs},
            {"CP", config.cp},
            {"EP", config.ep},
            {"VPP", config.vpp}}},
          {"layer_placement", {{"vit_layer_placement", vision}, {"llm_layer_placement", layers}}},
          {"layer_recompute",
           {{"vit_layer_recompute", visionRecomputed}, {"llm_layer_recompute", recomputed}}},
          {"e2e_time", stepSeconds * 1e3},
          {"throughput", static_cast<double>(config.gbs * estimate.sequence) / stepSeconds /
                             static_cast<double>(estimate.worldSize)}};
}

/// Megatron-Core's --pipeline-model-parallel-layout: the virtual stages in order (chunk c of
/// stage s is the c P + s-th), "E" the embedding, "t" a decoder layer, "L" the loss (head), e.g.
/// "Et*4|t*5|t*5|t*3,L" for 4, 5, 5 and 3 layers on 4 stages.
std::string pipelineLayout(const std::vector<int64_t>& virtualStageLayers) {
  std::vector<std::string> stages;
  for (size_t v = 0; v < virtualStageLayers.size(); ++v) {
    std::string stage = v == 0 ? "E" : "";
    if (virtualStageLayers[v] > 0) stage += fmt::format("t*{}", virtualStageLayers[v]);
    if (v + 1 == virtualStageLayers.size()) stage += stage.empty() ? "L" : ",L";
    stages.push_back(stage);
  }
  return fmt::format("{}", fmt::join(stages, "|"));
}

/// How Megatron-LM places the layers: evenly by default; uneven first and last stages with
/// --decoder-first/last-pipeline-num-layers when the middle stages are even and there is one
/// chunk per stage; any other split with Megatron-Core's --pipeline-model-parallel-layout.
std::string layerArguments(const MegatronConfig& config,
                           const std::vector<int64_t>& virtualStageLayers) {
  const auto even = [](auto begin, auto end) {
    return std::adjacent_find(begin, end, std::not_equal_to<>()) == end;
  };
  if (even(virtualStageLayers.begin(), virtualStageLayers.end())) {
    if (config.vpp <= 1 || virtualStageLayers.empty()) return "";
    return fmt::format(" --num-layers-per-virtual-pipeline-stage {}", virtualStageLayers.front());
  }
  if (config.vpp <= 1 && virtualStageLayers.size() > 2 &&
      even(virtualStageLayers.begin() + 1, virtualStageLayers.end() - 1)) {
    return fmt::format(
        " --decoder-first-pipeline-num-layers {} --decoder-last-pipeline-num-layers {}",
        virtualStageLayers.front(), virtualStageLayers.back());
  }
  return fmt::format(" --pipeline-model-parallel-layout \"{}\"",
                     pipelineLayout(virtualStageLayers));
}

std::string megatronArguments(const MegatronConfig& config,
                              const std::vector<int64_t>& virtualStageLayers) {
  std::string args = fmt::format(
      "--tensor-model-parallel-size {} --pipeline-model-parallel-size {} --micro-batch-size {} "
      "--global-batch-size {}",
      config.tp, config.pp, config.mbs, config.gbs);
  if (config.cp > 1) args += fmt::format(" --context-parallel-size {}", config.cp);
  if (config.ep > 1) {
    args += fmt::format(" --expert-model-parallel-size {} --moe-token-dispatcher-type alltoall",
                        config.ep);
  }
  args += layerArguments(config, virtualStageLayers);
  if (config.sequenceParallel) args += " --sequence-parallel";
  if (config.zeroBubble) args += " (zero-bubble H1 schedule: Qi et al.'s zero-bubble Megatron-LM)";
  if (!config.recomputeBlocks.empty()) {
    args += " (full recompute of the first layers of each stage, per llm_layer_recompute)";
  }
  if (config.recompute == "selective") args += " --recompute-granularity selective";
  if (config.recompute == "full") {
    args += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  }
  if (config.zero == 1) args += " --use-distributed-optimizer";
  if (config.zero >= 2) {
    args += fmt::format(" (ZeRO {}: no Megatron-LM flag; DeepSpeed or FSDP)", config.zero);
  }
  return args;
}

std::string mindsporeParallelConfig(const MegatronConfig& config, int64_t microBatches) {
  return fmt::format(
      "parallel_config:\n  data_parallel: {}\n  model_parallel: {}\n  context_parallel: {}\n"
      "  expert_parallel: {}\n  pipeline_stage: {}\n  micro_batch_num: {}\n  use_seq_parallel: {}\n"
      "  optimizer_shard: {}\nrecompute_config:\n  recompute: {}\n  select_recompute: {}\n",
      config.dp, config.tp, config.cp, config.ep, config.pp, microBatches,
      config.sequenceParallel ? "True" : "False", config.zero > 0 ? "True" : "False",
      config.recompute == "full" ? "True" : "False",
      config.recompute == "selective" ? "True" : "False");
}

/// "TP 2 CP 2 PP 8 DP 2 EP 2 MBS 1 SP zb-h1": a configuration's shape in report lines.
std::string shapeName(const MegatronConfig& config) {
  std::string name = fmt::format("TP {}", config.tp);
  if (config.cp > 1) name += fmt::format(" CP {}", config.cp);
  name += fmt::format(" PP {} DP {}", config.pp, config.dp);
  if (config.ep > 1) name += fmt::format(" EP {}", config.ep);
  name += fmt::format(" MBS {}", config.mbs);
  if (config.sequenceParallel) name += " SP";
  if (config.zeroBubble) name += " zb-h1";
  return name;
}

/// One search: the model, the cluster, the block profiler and the evaluators over them.
class SearchRun {
 public:
  SearchRun(const SearchArgs& args, frontend::TransformerConfig transformer,
            cluster::Cluster cluster, std::optional<ProfileTable> table)
      : args_(args),
        transformer_(std::move(transformer)),
        cluster_(std::move(cluster)),
        base_(baseOf(args, transformer_)),
        profiler_(base_, transformer_, std::move(table)) {}

  int run();

 private:
  static MegatronConfig baseOf(const SearchArgs& args,
                               const frontend::TransformerConfig& transformer) {
    MegatronConfig base = args.base;
    base.nodes = std::max(args.base.nodes, 1);
    base.transformer = transformer;  // read once, not again for every evaluation
    return base;
  }
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
  /// (search/layer_placement.h), whichever is faster; with a measured table, the closed form's
  /// (the full model does not read the table). Remembers what it found in refined_.
  Expected<search::HybridScore> refine(const search::HybridCandidate& candidate);
  /// The step of an evaluated configuration: the full model's, or with a measured table the
  /// closed form's.
  Expected<double> stepOf(const MegatronConfig& config, const ConfigEstimate& estimate,
                          const search::Placement* placement);
  int nothingFits(const search::HybridResult& result) const;
  void printReport(const search::HybridResult& result) const;
  /// The top-k table.
  void printRanking(const search::HybridResult& result) const;

  const SearchArgs& args_;
  frontend::TransformerConfig transformer_;
  cluster::Cluster cluster_;
  MegatronConfig base_;
  BlockProfiler profiler_;
  /// What refining a candidate found: the configuration as evaluated (placed exactly when that
  /// was faster), its step and the placement tried. (Not its estimate: that holds the whole
  /// graph; the winner's is evaluated again.)
  struct Refined {
    MegatronConfig config;
    double seconds = 0;
    bool placed = false;
    std::string placementLine;  ///< empty when placement does not apply
  };
  /// Places the candidate exactly (search/layer_placement.h) and, when that changes its layers,
  /// evaluates the placed plan on the full model; keeps it in `refined` and `score` when it is
  /// faster (or only it fits).
  Status tryPlacement(const search::HybridCandidate& candidate, Refined& refined,
                      search::HybridScore& score);
  /// The report's line for a candidate's placement.
  static std::string placementLine(const MegatronConfig& config, const search::Placement& placement,
                                   double placedSeconds, const search::HybridCandidate& candidate,
                                   double unplacedSeconds);
  static std::string keyOf(const search::HybridCandidate& c);
  [[nodiscard]] int placedCount() const {
    return static_cast<int>(std::count_if(refined_.begin(), refined_.end(),
                                          [](const auto& entry) { return entry.second.placed; }));
  }
  std::map<std::string, Refined> refined_;
  // The winner: its configuration, its full-model estimate and its step (the full model's, or
  // the measured closed form's with a table).
  MegatronConfig best_;
  std::optional<ConfigEstimate> estimate_;
  double bestSeconds_ = 0;
  bool placedBest_ = false;
};

search::HybridModel SearchRun::model() const {
  search::HybridModel model;
  model.layers = transformer_.layers + transformer_.vision.layers;
  model.heads = transformer_.heads;
  model.kvHeads = transformer_.kvHeads;
  model.ffn = transformer_.ffn;
  model.vocab = transformer_.vocab;
  model.seq = args_.base.seq > 0 ? args_.base.seq : transformer_.seq;
  const auto& v = transformer_.vision;
  model.textTokens = model.seq - (vision() ? v.patches / (v.merge * v.merge) : 0);
  model.visionHeads = vision() ? v.heads : 0;
  model.visionFfn = v.ffn;
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
  return search::HybridScore{estimate->stepSeconds, estimate->peak(),
                             estimate->peak() <= cluster_.device.memoryBytes};
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

std::string SearchRun::keyOf(const search::HybridCandidate& c) {
  return fmt::format("{} {} {} {} {} {} {} {} {} {} {}", c.tp, c.cp, c.ep, c.pp, c.dp, c.vpp, c.mbs,
                     c.sequenceParallel, c.zeroBubble, c.recompute, c.zero);
}

Expected<double> SearchRun::stepOf(const MegatronConfig& config, const ConfigEstimate& estimate,
                                   const search::Placement* placement) {
  if (!profiler_.hasTable()) return estimate.stepSeconds;
  auto measured =
      placement ? closedForm(config, placement->layers, placement->recomputed) : closedForm(config);
  if (!measured) return measured.error();
  return measured->stepSeconds;
}

Expected<search::HybridScore> SearchRun::refine(const search::HybridCandidate& candidate) {
  auto config = withLayers(candidate);
  if (!config) return config.error();
  auto estimate = estimateConfig(*config);
  if (!estimate) return estimate.error();
  auto seconds = stepOf(*config, *estimate, nullptr);
  if (!seconds) return seconds.error();
  Refined refined{*config, *seconds, false, ""};
  search::HybridScore score{
      *seconds,
      *std::max_element(estimate->peakMemoryBytes.begin(), estimate->peakMemoryBytes.end()),
      estimate->fits()};
  if (Status status = tryPlacement(candidate, refined, score); !status) return status.error();
  refined_.insert_or_assign(keyOf(candidate), std::move(refined));
  return score;
}

Status SearchRun::tryPlacement(const search::HybridCandidate& candidate, Refined& refined,
                               search::HybridScore& score) {
  // From no recompute when the candidate recomputes every layer: the placement chooses how many
  // layers each stage recomputes.
  MegatronConfig toPlace = configOf(base_, candidate);
  if (toPlace.recompute == "full") toPlace.recompute = "none";
  auto placement = placeOnClosedForm(toPlace, profiler_);
  if (!placement) {
    refined.placementLine =
        fmt::format("  {}: not placed: {}", shapeName(toPlace), placement.error().message);
    return {};
  }
  if (!*placement) return {};
  auto profile = profiler_.profileOf(toPlace);
  if (!profile) return profile.error();
  // The placement the candidate was evaluated with needs no second evaluation.
  const search::Placement& layout = **placement;
  const bool unchanged = candidate.recompute != "full" &&
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
  score = {*seconds,
           *std::max_element(placed->estimate.peakMemoryBytes.begin(),
                             placed->estimate.peakMemoryBytes.end()),
           true};
  return {};
}

std::string SearchRun::placementLine(const MegatronConfig& config,
                                     const search::Placement& placement, double placedSeconds,
                                     const search::HybridCandidate& candidate,
                                     double unplacedSeconds) {
  const auto& layers = placement.layers;
  const auto& recomputed = placement.recomputed;
  const std::string towers = layers.size() > 1 ? fmt::format("ViT [{}] recomputed [{}], LLM ",
                                                             fmt::join(layers.front(), ", "),
                                                             fmt::join(recomputed.front(), ", "))
                                               : "";
  return fmt::format("  {}: {}layers{} [{}], recomputed [{}]: {} (unplaced, {}: {})",
                     shapeName(config), towers, config.vpp > 1 ? " per virtual stage" : "",
                     fmt::join(layers.back(), ", "), fmt::join(recomputed.back(), ", "),
                     formatSeconds(placedSeconds), candidate.recompute,
                     formatSeconds(unplacedSeconds));
}

int SearchRun::nothingFits(const search::HybridResult& result) const {
  // Under ZeRO-3 and pipelining, memory per device falls about in proportion to the devices, so
  // the node count that would fit is estimated from the leanest candidate's overflow.
  const auto& [leanest, score] = result.leanest;
  const auto nodes = static_cast<int64_t>(
      std::ceil(static_cast<double>(base_.nodes) * static_cast<double>(score.peakBytes) /
                static_cast<double>(cluster_.device.memoryBytes)));
  return reportError(Error{fmt::format(
      "nothing fits: the leanest configuration (TP {} CP {} PP {} DP {} EP {}, recompute {}, ZeRO "
      "{}) needs {} per device of {}; about --nodes {} would fit it",
      leanest.tp, leanest.cp, leanest.pp, leanest.dp, leanest.ep, leanest.recompute, leanest.zero,
      formatBytes(score.peakBytes), formatBytes(cluster_.device.memoryBytes),
      std::max<int64_t>(nodes, base_.nodes + 1))});
}

int SearchRun::run() {
  const search::HybridModel shapeModel = model();
  search::HybridSpace space;
  space.world = cluster_.numDevices;
  space.devicesPerNode = cluster_.devicesPerNode;
  space.globalBatch = args_.base.gbs;
  const bool terminal = isatty(STDERR_FILENO) != 0;
  auto progress = [&](int done, int total) {
    if (terminal) fmt::print(stderr, "\rrefining on the full model: {}/{}", done, total);
  };
  auto result = search::searchHybrid(
      shapeModel, space, [this](const auto& c) { return screen(c); },
      [this](const auto& c) { return refine(c); }, kRefinedCandidates, progress);
  if (terminal) fmt::print(stderr, "\n");
  if (!result) return reportError(result.error());
  if (result->ranked.empty()) return nothingFits(*result);
  const Refined& winner = refined_.at(keyOf(result->ranked.front().first));
  best_ = winner.config;
  auto estimate = estimateConfig(best_);
  if (!estimate) return reportError(estimate.error());
  estimate_ = std::move(*estimate);
  bestSeconds_ = winner.seconds;
  placedBest_ = winner.placed;
  const nlohmann::ordered_json optimal = optimalConfigJson(best_, *estimate_, bestSeconds_);
  std::ofstream file(args_.out);
  if (!file) return reportError(Error{fmt::format("--out {}: cannot write file", args_.out)});
  file << optimal.dump(4) << "\n";
  if (args_.json) {
    fmt::print("{}\n", optimal.dump(4));
    return kExitOk;
  }
  printReport(*result);
  return kExitOk;
}

void SearchRun::printReport(const search::HybridResult& result) const {
  const ConfigEstimate& estimate = *estimate_;
  fmt::print("autopar search: {} on {} ({} x {}), global batch {}\n", args_.base.model,
             cluster_.name, cluster_.numDevices, cluster_.device.name, args_.base.gbs);
  if (profiler_.hasTable()) {
    fmt::print(
        "block costs measured (--profile {}) for {} of {} block settings, analytic for the rest; "
        "ranked on the closed form\n",
        args_.profile, profiler_.measuredSettings(), profiler_.settings());
  }
  fmt::print(
      "{} shapes, {} configurations screened in closed form ({} fit, {} block probes), {} "
      "evaluated on the full model ({} fit), each also placed exactly where it pipelines ({} "
      "placed faster)\n\n",
      result.shapes, result.screened, result.screenFits, profiler_.probes(), result.refined,
      result.ranked.size(), placedCount());
  printRanking(result);
  std::vector<std::string> lines;
  for (size_t i = 0; i < result.ranked.size() && static_cast<int>(i) < kPlacedCandidates; ++i) {
    const std::string& line = refined_.at(keyOf(result.ranked[i].first)).placementLine;
    if (!line.empty()) lines.push_back(line);
  }
  if (!lines.empty()) {
    fmt::print("\nNon-uniform placement of the leaders ({} with each):\n",
               profiler_.hasTable() ? "the measured closed form" : "the full model evaluated");
    for (const auto& line : lines) fmt::print("{}\n", line);
  }
  fmt::print("\nBest configuration{}:\n\n", placedBest_ ? " (layers placed non-uniformly)"
                                            : vision()  ? " (layers split by time)"
                                                        : " (layers split evenly)");
  if (profiler_.hasTable()) {
    fmt::print(
        "step time from the measured blocks {}, {:.0f} tokens/s; the analytic cost model's "
        "estimate of the same configuration (it does not read --profile) follows\n\n",
        formatSeconds(bestSeconds_),
        static_cast<double>(args_.base.gbs * model().seq) / bestSeconds_);
  }
  printEstimateReport(best_, estimate);
  fmt::print("\nMegatron-LM: {}\n", megatronArguments(best_, layersPerVirtualStage(estimate)));
  if (vision()) {
    // MindSpeed-MM places each tower's layers by its model JSON.
    fmt::print(
        "\nMindSpeed-MM (model json): image_encoder.vision_encoder.pipeline_num_layers [{}], "
        "text_decoder.pipeline_num_layers [{}]\n",
        fmt::join(layersPerStage(estimate, best_.pp, "vit").layers, ", "),
        fmt::join(layersPerStage(estimate, best_.pp, "llm").layers, ", "));
  }
  fmt::print("\nMindSpore (MindFormers yaml):\n{}",
             mindsporeParallelConfig(best_, estimate.microBatches));
  fmt::print("\nwrote {}\n", args_.out);
}

void SearchRun::printRanking(const search::HybridResult& result) const {
  // The EP column only for a model with experts.
  const bool experts = transformer_.experts > 0;
  fmt::print(
      "{:>4} {:>3} {:>3} {:>3} {:>4} {}{:>4} {:>6} {:>4} {:>3} {:>10} {:>5} {:>11} {:>12} {:>6} "
      "{:>11}\n",
      "rank", "TP", "CP", "PP", "DP", experts ? fmt::format("{:>3} ", "EP") : "", "VPP", "sched",
      "MBS", "SP", "recompute", "ZeRO", "step", "tokens/s", "MFU", "peak");
  // Every configuration does the same model FLOPs per step, so MFU scales as 1 / step time.
  const double mfuSeconds = estimate_->mfu * estimate_->stepSeconds;
  const int64_t seq = model().seq;
  for (size_t i = 0; i < result.ranked.size() && static_cast<int>(i) < args_.top; ++i) {
    const auto& [c, score] = result.ranked[i];
    const double tokens = static_cast<double>(args_.base.gbs * seq) / score.stepSeconds;
    const char* schedule = c.pp == 1 ? "-" : c.vpp > 1 ? "int" : c.zeroBubble ? "zb-h1" : "1f1b";
    fmt::print(
        "{:>4} {:>3} {:>3} {:>3} {:>4} {}{:>4} {:>6} {:>4} {:>3} {:>10} {:>5} {:>11} {:>12.0f} "
        "{:>5.1f}% {:>11}\n",
        i + 1, c.tp, c.cp, c.pp, c.dp, experts ? fmt::format("{:>3} ", c.ep) : "", c.vpp, schedule,
        c.mbs, c.sequenceParallel ? "on" : "off", c.recompute, c.zero,
        formatSeconds(score.stepSeconds), tokens, 100 * mfuSeconds / score.stepSeconds,
        formatBytes(score.peakBytes));
  }
}

int runSearch(const SearchArgs& args) {
  if (auto status = applyCostModel(args.costModel); !status) return reportError(status.error());
  if (auto precision = parsePrecision(args.base.precision); !precision) {
    return reportError(precision.error());
  }
  auto transformer = transformerConfigOf(args.base.model);
  if (!transformer) return reportError(transformer.error());
  MegatronConfig whole = args.base;  // the whole cluster as one data-parallel group
  whole.nodes = std::max(args.base.nodes, 1);
  auto one = loadCluster(whole.cluster, whole.nodes, 0, whole.devicesPerNode);
  if (!one) return reportError(one.error());
  whole.dp = one->numDevices;
  auto cluster = clusterFor(whole);
  if (!cluster) return reportError(cluster.error());
  std::optional<ProfileTable> table;
  if (args.profile.empty() && (args.samplingNodes > 0 || args.samplingDevicesPerNode > 0)) {
    return reportError(
        Error{"--nnodes/--nproc-per-node: name the cluster a --profile table was measured on; give "
              "--profile (the target cluster is --nodes and --devices-per-node)"});
  }
  if (!args.profile.empty()) {
    auto read = readProfileTable(args.profile, cluster->device.name, args.samplingNodes,
                                 args.samplingDevicesPerNode);
    if (!read) return reportError(read.error());
    table = std::move(*read);
  }
  SearchRun run(args, std::move(*transformer), std::move(*cluster), std::move(table));
  return run.run();
}

}  // namespace

void addSearchVerb(CLI::App& app, Action& action) {
  CLI::App* verb = app.add_subcommand(
      "search",
      "Search TP/PP/DP/VPP/micro-batch/recompute/ZeRO for the fastest configuration that fits "
      "(seed 003); writes auto_parallel_search_optimal_config.json");
  auto args = std::make_shared<SearchArgs>();
  addConfigurationOptions(*verb, args->base, args->costModel);
  verb->add_option("--top", args->top, "configurations to list")->capture_default_str();
  verb->add_option("--out", args->out, "where to write the optimal configuration")
      ->capture_default_str();
  verb->add_flag("--json", args->json,
                 "print the optimal configuration JSON instead of the report");
  verb->add_option("--profile", args->profile,
                   "measured block table (docs/profile-table.md): its block times and "
                   "activations replace the analytic ones");
  verb->add_option("--nnodes", args->samplingNodes,
                   "nodes of the cluster the --profile table was measured on")
      ->check(positive());
  verb->add_option("--nproc-per-node", args->samplingDevicesPerNode,
                   "devices per node of the cluster the --profile table was measured on")
      ->check(positive());
  verb->callback([&action, args] { action = [args] { return runSearch(*args); }; });
}

}  // namespace autopar::cli
