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
#include <nlohmann/json.hpp>

#include "cli/block_profile.h"
#include "cli/megatron_estimate.h"
#include "cli/verbs.h"
#include "search/hybrid.h"

namespace autopar::cli {

namespace {

/// How many of the fastest screened configurations the full model evaluates again.
constexpr int kRefinedCandidates = 16;
/// How many of the fastest uniform configurations get the layer placement search.
constexpr int kPlacedCandidates = 8;

struct SearchArgs {
  MegatronConfig base;  ///< model, cluster, nodes, gbs, seq, precision, inter-node bandwidth
  int top = 10;
  std::string out = "auto_parallel_search_optimal_config.json";
  std::string costModel;
  bool json = false;
};

MegatronConfig configOf(const MegatronConfig& base, const search::HybridCandidate& candidate) {
  MegatronConfig config = base;
  config.tp = candidate.tp;
  config.cp = candidate.cp;
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
                                         const ConfigEstimate& estimate) {
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
          {"e2e_time", estimate.stepSeconds * 1e3},
          {"throughput", estimate.tokensPerSecond / static_cast<double>(estimate.worldSize)}};
}

/// Megatron-LM takes uneven first and last stages (--decoder-first/last-pipeline-num-layers)
/// when the middle stages are even; other layouts have no flag.
std::string unevenStages(const std::vector<int64_t>& layers) {
  if (layers.size() < 2) return "";
  const std::vector<int64_t> middle(layers.begin() + 1, layers.end() - 1);
  const bool evenMiddle =
      std::adjacent_find(middle.begin(), middle.end(), std::not_equal_to<>()) == middle.end();
  if (std::adjacent_find(layers.begin(), layers.end(), std::not_equal_to<>()) == layers.end()) {
    return "";
  }
  if (!evenMiddle) {
    return fmt::format(" (stages of [{}] layers: no Megatron-LM flag for uneven middle stages)",
                       fmt::join(layers, ", "));
  }
  return fmt::format(
      " --decoder-first-pipeline-num-layers {} --decoder-last-pipeline-num-layers {}",
      layers.front(), layers.back());
}

std::string megatronArguments(const MegatronConfig& config, int64_t layers,
                              const std::vector<int64_t>& stageLayers) {
  std::string args = fmt::format(
      "--tensor-model-parallel-size {} --pipeline-model-parallel-size {} --micro-batch-size {} "
      "--global-batch-size {}",
      config.tp, config.pp, config.mbs, config.gbs);
  if (config.cp > 1) args += fmt::format(" --context-parallel-size {}", config.cp);
  if (config.vpp > 1) {
    args += fmt::format(" --num-layers-per-virtual-pipeline-stage {}",
                        layers / (config.pp * config.vpp));
  }
  args += unevenStages(stageLayers);
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
      "  pipeline_stage: {}\n  micro_batch_num: {}\n  use_seq_parallel: {}\n  optimizer_shard: {}\n"
      "recompute_config:\n  recompute: {}\n  select_recompute: {}\n",
      config.dp, config.tp, config.cp, config.pp, microBatches,
      config.sequenceParallel ? "True" : "False", config.zero > 0 ? "True" : "False",
      config.recompute == "full" ? "True" : "False",
      config.recompute == "selective" ? "True" : "False");
}

int runSearch(const SearchArgs& args) {
  if (auto status = applyCostModel(args.costModel); !status) return reportError(status.error());
  if (auto precision = parsePrecision(args.base.precision); !precision) {
    return reportError(precision.error());
  }
  auto transformer = transformerConfigOf(args.base.model);
  if (!transformer) return reportError(transformer.error());
  MegatronConfig base = args.base;
  base.nodes = std::max(args.base.nodes, 1);
  base.transformer = *transformer;  // read once, not again for every evaluation
  MegatronConfig whole = base;      // the whole cluster as one data-parallel group
  auto one = loadCluster(base.cluster, base.nodes, 0, base.devicesPerNode);
  if (!one) return reportError(one.error());
  whole.dp = one->numDevices;
  auto cluster = clusterFor(whole);
  if (!cluster) return reportError(cluster.error());
  search::HybridModel model;
  model.layers = transformer->layers + transformer->vision.layers;
  model.heads = transformer->heads;
  model.kvHeads = transformer->kvHeads;
  model.ffn = transformer->ffn;
  model.vocab = transformer->vocab;
  model.seq = args.base.seq > 0 ? args.base.seq : transformer->seq;
  const auto& vision = transformer->vision;
  model.textTokens =
      model.seq - (vision.layers > 0 ? vision.patches / (vision.merge * vision.merge) : 0);
  model.visionHeads = transformer->vision.layers > 0 ? transformer->vision.heads : 0;
  model.visionFfn = transformer->vision.ffn;
  search::HybridSpace space;
  space.world = cluster->numDevices;
  space.devicesPerNode = cluster->devicesPerNode;
  space.globalBatch = args.base.gbs;
  BlockProfiler profiler(base, *transformer);
  auto screen = [&](const search::HybridCandidate& candidate) -> Expected<search::HybridScore> {
    auto estimate = closedFormEstimate(configOf(base, candidate), profiler, *cluster);
    if (!estimate) return estimate.error();
    return search::HybridScore{estimate->stepSeconds, estimate->peak(),
                               estimate->peak() <= cluster->device.memoryBytes};
  };
  // The full model places the layers as the screen did: evenly for an LLM (its default), by time
  // with a vision tower.
  auto withLayers = [&](const search::HybridCandidate& candidate) -> Expected<MegatronConfig> {
    MegatronConfig config = configOf(base, candidate);
    if (transformer->vision.layers == 0) return config;
    auto profile = profiler.profileOf(config);
    if (!profile) return profile.error();
    const search::StackCounts layers = screenLayers(config, *profile, profiler.stacks());
    search::StackCounts none = layers;
    for (auto& stack : none) std::fill(stack.begin(), stack.end(), 0);
    applyPlacement(layers, none, config);
    return config;
  };
  auto evaluate = [&](const search::HybridCandidate& candidate) -> Expected<search::HybridScore> {
    auto config = withLayers(candidate);
    if (!config) return config.error();
    auto estimate = estimateConfig(*config);
    if (!estimate) return estimate.error();
    const auto& peaks = estimate->peakMemoryBytes;
    return search::HybridScore{estimate->stepSeconds, *std::max_element(peaks.begin(), peaks.end()),
                               estimate->fits()};
  };
  const bool terminal = isatty(STDERR_FILENO) != 0;
  auto progress = [&](int done, int total) {
    if (terminal) fmt::print(stderr, "\rrefining on the full model: {}/{}", done, total);
  };
  auto result = search::searchHybrid(model, space, screen, evaluate, kRefinedCandidates, progress);
  if (terminal) fmt::print(stderr, "\n");
  if (!result) return reportError(result.error());
  if (result->ranked.empty()) {
    // Under ZeRO-3 and pipelining, memory per device falls about in proportion to the devices,
    // so the node count that would fit is estimated from the leanest candidate's overflow.
    const auto& [leanest, score] = result->leanest;
    const auto nodes = static_cast<int64_t>(
        std::ceil(static_cast<double>(base.nodes) * static_cast<double>(score.peakBytes) /
                  static_cast<double>(cluster->device.memoryBytes)));
    return reportError(Error{fmt::format(
        "nothing fits: the leanest configuration (TP {} CP {} PP {} DP {}, recompute {}, ZeRO {}) "
        "needs {} per device of {}; about --nodes {} would fit it",
        leanest.tp, leanest.cp, leanest.pp, leanest.dp, leanest.recompute, leanest.zero,
        formatBytes(score.peakBytes), formatBytes(cluster->device.memoryBytes),
        std::max<int64_t>(nodes, base.nodes + 1))});
  }
  // The leading configurations get non-uniform placement and per-stage recompute; a placed one
  // replaces its uniform self when the full evaluation finds it faster.
  auto leader = withLayers(result->ranked.front().first);
  if (!leader) return reportError(leader.error());
  MegatronConfig best = *leader;
  auto estimate = estimateConfig(best);
  if (!estimate) return reportError(estimate.error());
  int placed = 0;
  bool placedBest = false;
  std::vector<std::string> placementLines;
  for (size_t i = 0; i < result->ranked.size() && static_cast<int>(i) < kPlacedCandidates; ++i) {
    MegatronConfig candidate = configOf(base, result->ranked[i].first);
    if (candidate.recompute == "full") candidate.recompute = "none";  // placement chooses
    auto placement = placeConfiguration(candidate, profiler);
    if (!placement) {  // the uniform result stands; say why this one was not placed
      placementLines.push_back(fmt::format("  TP {} PP {} DP {} MBS {}: not placed: {}",
                                           candidate.tp, candidate.pp, candidate.dp, candidate.mbs,
                                           placement.error().message));
      continue;
    }
    if (!*placement || !(*placement)->estimate.fits()) continue;
    ++placed;
    const auto& layers = (*placement)->placement.layers;
    const auto& recomputed = (*placement)->placement.recomputed;
    const std::string vision = layers.size() > 1 ? fmt::format("ViT [{}] recomputed [{}], LLM ",
                                                               fmt::join(layers.front(), ", "),
                                                               fmt::join(recomputed.front(), ", "))
                                                 : "";
    placementLines.push_back(fmt::format(
        "  TP {} PP {} DP {} MBS {}: {}layers [{}], recomputed [{}]: {} (unplaced, {}: {})",
        candidate.tp, candidate.pp, candidate.dp, candidate.mbs, vision,
        fmt::join(layers.back(), ", "), fmt::join(recomputed.back(), ", "),
        formatSeconds((*placement)->estimate.stepSeconds), result->ranked[i].first.recompute,
        formatSeconds(result->ranked[i].second.stepSeconds)));
    if ((*placement)->estimate.stepSeconds < estimate->stepSeconds) {
      placedBest = true;
      best = (*placement)->config;
      *estimate = std::move((*placement)->estimate);
    }
  }
  const nlohmann::ordered_json optimal = optimalConfigJson(best, *estimate);
  std::ofstream file(args.out);
  if (!file) return reportError(Error{fmt::format("--out {}: cannot write file", args.out)});
  file << optimal.dump(4) << "\n";
  if (args.json) {
    fmt::print("{}\n", optimal.dump(4));
    return kExitOk;
  }
  fmt::print("autopar search: {} on {} ({} x {}), global batch {}\n", args.base.model,
             cluster->name, cluster->numDevices, cluster->device.name, args.base.gbs);
  fmt::print(
      "{} shapes, {} configurations screened in closed form ({} fit, {} block probes), {} "
      "evaluated on the full model ({} fit); non-uniform placement tried on {} of the leaders\n\n",
      result->shapes, result->screened, result->screenFits, profiler.probes(), result->refined,
      result->ranked.size(), placed);
  fmt::print(
      "{:>4} {:>3} {:>3} {:>3} {:>4} {:>4} {:>6} {:>4} {:>3} {:>10} {:>5} {:>11} {:>12} {:>6} "
      "{:>11}\n",
      "rank", "TP", "CP", "PP", "DP", "VPP", "sched", "MBS", "SP", "recompute", "ZeRO", "step",
      "tokens/s", "MFU", "peak");
  // Every configuration does the same model FLOPs per step, so MFU scales as 1 / step time.
  const double mfuSeconds = estimate->mfu * estimate->stepSeconds;
  for (size_t i = 0; i < result->ranked.size() && static_cast<int>(i) < args.top; ++i) {
    const auto& [c, score] = result->ranked[i];
    const double tokens = static_cast<double>(args.base.gbs * model.seq) / score.stepSeconds;
    const char* schedule = c.pp == 1 ? "-" : c.vpp > 1 ? "int" : c.zeroBubble ? "zb-h1" : "1f1b";
    fmt::print(
        "{:>4} {:>3} {:>3} {:>3} {:>4} {:>4} {:>6} {:>4} {:>3} {:>10} {:>5} {:>11} {:>12.0f} "
        "{:>5.1f}% {:>11}\n",
        i + 1, c.tp, c.cp, c.pp, c.dp, c.vpp, schedule, c.mbs, c.sequenceParallel ? "on" : "off",
        c.recompute, c.zero, formatSeconds(score.stepSeconds), tokens,
        100 * mfuSeconds / score.stepSeconds, formatBytes(score.peakBytes));
  }
  if (!placementLines.empty()) {
    fmt::print("\nNon-uniform placement (the full model evaluated with each):\n");
    for (const auto& line : placementLines) fmt::print("{}\n", line);
  }
  fmt::print("\nBest configuration{}:\n\n", placedBest ? " (layers placed non-uniformly)"
                                            : transformer->vision.layers > 0
                                                ? " (layers split by time)"
                                                : " (layers split evenly)");
  printEstimateReport(best, *estimate);
  fmt::print("\nMegatron-LM: {}\n", megatronArguments(best, transformer->layers,
                                                      layersPerStage(*estimate, best.pp).layers));
  if (transformer->vision.layers > 0) {
    // MindSpeed-MM places each tower's layers by its model JSON.
    fmt::print(
        "\nMindSpeed-MM (model json): image_encoder.vision_encoder.pipeline_num_layers [{}], "
        "text_decoder.pipeline_num_layers [{}]\n",
        fmt::join(layersPerStage(*estimate, best.pp, "vit").layers, ", "),
        fmt::join(layersPerStage(*estimate, best.pp, "llm").layers, ", "));
  }
  fmt::print("\nMindSpore (MindFormers yaml):\n{}",
             mindsporeParallelConfig(best, estimate->microBatches));
  fmt::print("\nwrote {}\n", args.out);
  return kExitOk;
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
  verb->callback([&action, args] { action = [args] { return runSearch(*args); }; });
}

}  // namespace autopar::cli
