/// `autopar search`: runs the planner's configuration search (planner/configuration_search.h),
/// prints the top configurations, the best one's memory per stage and its Megatron-LM, MindSpeed-MM
/// and MindSpore settings, and writes seed 003's auto_parallel_search_optimal_config.json.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/configuration_options.h"
#include "cli/verbs.h"
#include "export/megatron_args.h"
#include "export/mindformers_yaml.h"
#include "export/mindspeed_json.h"
#include "planner/configuration_search.h"
#include "planner/inputs.h"
#include "util/atomic_file.h"

namespace autopar::cli {

namespace {

/// How many of the leaders' placements the report lists.
constexpr int kPlacedCandidates = 8;

struct SearchArgs {
  planner::SearchRequest request;
  int top = 10;
  std::string out = "auto_parallel_search_optimal_config.json";
  ConfigurationFlags flags;
  bool json = false;
};

/// The top-k table.
void printRanking(const planner::ConfigurationSearch& found, const SearchArgs& args) {
  // The EP column only for a model with experts; the blocks column only with an op-level search
  // ("ilp" where its sharding was taken, "megatron" where Megatron-LM's annotation was faster).
  const bool experts = found.transformer.experts > 0;
  const bool opSearch = found.opSearch != planner::OpSearch::kMegatron;
  fmt::print(
      "{:>4} {:>3} {:>3} {:>3} {:>4} {}{:>4} {:>6} {:>4} {:>3} {:>10} {:>5} {:>11} {:>12} {:>6} "
      "{:>11}{}\n",
      "rank", "TP", "CP", "PP", "DP", experts ? fmt::format("{:>3} ", "EP") : "", "VPP", "sched",
      "MBS", "SP", "recompute", "ZeRO", "step", "tokens/s", "MFU", "peak",
      opSearch ? fmt::format(" {:>21}", "blocks") : "");
  // Every configuration does the same model FLOPs per step, so MFU scales as 1 / step time.
  const double mfuSeconds = found.estimate->mfu * found.estimate->stepSeconds;
  const auto& ranked = found.hybrid.ranked;
  for (size_t i = 0; i < ranked.size() && static_cast<int>(i) < args.top; ++i) {
    const auto& [c, score] = ranked[i];
    const double tokens =
        static_cast<double>(args.request.base.gbs * found.sequence) / score.stepSeconds;
    const char* schedule = c.pp == 1 ? "-" : c.vpp > 1 ? "int" : c.zeroBubble ? "zb-h1" : "1f1b";
    const std::string_view blocks =
        found.refined[i].opSearchTaken ? planner::opSearchName(found.opSearch) : "megatron";
    fmt::print(
        "{:>4} {:>3} {:>3} {:>3} {:>4} {}{:>4} {:>6} {:>4} {:>3} {:>10} {:>5} {:>11} {:>12.0f} "
        "{:>5.1f}% {:>11}{}\n",
        i + 1, c.tp, c.cp, c.pp, c.dp, experts ? fmt::format("{:>3} ", c.ep) : "", c.vpp, schedule,
        c.mbs, c.sequenceParallel ? "on" : "off", c.recompute, c.zero,
        planner::formatSeconds(score.stepSeconds), tokens, 100 * mfuSeconds / score.stepSeconds,
        planner::formatBytes(score.peakBytes), opSearch ? fmt::format(" {:>21}", blocks) : "");
  }
}

/// What the search did, the ranking, the leaders' placements and the winner's exports.
void printReport(const planner::ConfigurationSearch& found, const SearchArgs& args) {
  const planner::MegatronConfig& best = *found.best;
  const planner::ConfigEstimate& estimate = *found.estimate;
  const auto& result = found.hybrid;
  fmt::print("autopar search: {} on {} ({} x {}), global batch {}\n", args.request.base.model,
             found.cluster.name, found.cluster.numDevices, found.cluster.device.name,
             args.request.base.gbs);
  if (found.measured) {
    fmt::print(
        "block costs measured (--profile {}) for {} of {} block settings, analytic for the rest; "
        "ranked on the closed form\n",
        args.request.profilePath, found.measuredSettings, found.settings);
  }
  fmt::print(
      "{} shapes, {} configurations screened in closed form ({} fit, {} block probes), {} "
      "evaluated on the full model ({} fit), each also placed exactly where it pipelines ({} "
      "placed faster)\n\n",
      result.shapes, result.screened, result.screenFits, found.probes, result.refined,
      result.ranked.size(), found.placedFaster);
  if (found.opSearch != planner::OpSearch::kMegatron) {
    fmt::print(
        "op-level search: {} on each configuration's TP x CP submesh ({} block shardings "
        "searched); its sharding was faster than Megatron-LM's in {} of {} configurations "
        "evaluated "
        "on the full model\n\n",
        planner::opSearchName(found.opSearch), found.blockProbes, found.opSearchTaken,
        found.opSearchEvaluated);
  }
  printRanking(found, args);
  std::vector<std::string> lines;
  for (size_t i = 0; i < found.refined.size() && static_cast<int>(i) < kPlacedCandidates; ++i) {
    const std::string& line = found.refined[i].placementLine;
    if (!line.empty()) lines.push_back(line);
  }
  if (!lines.empty()) {
    fmt::print("\nNon-uniform placement of the leaders ({} with each):\n",
               found.measured ? "the measured closed form" : "the full model evaluated");
    for (const auto& line : lines) fmt::print("{}\n", line);
  }
  fmt::print("\nBest configuration{}:\n\n", found.placedBest ? " (layers placed non-uniformly)"
                                            : found.vision() ? " (layers split by time)"
                                                             : " (layers split evenly)");
  if (found.measured) {
    fmt::print(
        "step time from the measured blocks {}, {:.0f} tokens/s; the analytic cost model's "
        "estimate of the same configuration (it does not read --profile) follows\n\n",
        planner::formatSeconds(found.bestSeconds),
        static_cast<double>(args.request.base.gbs * found.sequence) / found.bestSeconds);
  }
  printEstimateReport(best, estimate);
  fmt::print("\nMegatron-LM: {}\n",
             exporters::megatronArguments(best, planner::layersPerVirtualStage(estimate)));
  if (found.vision()) {
    // MindSpeed-MM places each tower's layers by its model JSON.
    fmt::print(
        "\nMindSpeed-MM (model json): image_encoder.vision_encoder.pipeline_num_layers [{}], "
        "text_decoder.pipeline_num_layers [{}]\n",
        fmt::join(planner::layersPerStage(estimate, best.pp, "vit").layers, ", "),
        fmt::join(planner::layersPerStage(estimate, best.pp, "llm").layers, ", "));
  }
  fmt::print("\nMindSpore (MindFormers yaml):\n{}",
             exporters::mindformersParallelConfig(best, estimate.microBatches));
  fmt::print("\nwrote {}\n", args.out);
}

int runSearch(SearchArgs args) {
  if (auto status = applyConfigurationFlags(args.flags, args.request.base); !status) {
    return reportError(status.error());
  }
  const bool terminal = isatty(STDERR_FILENO) != 0;
  auto progress = [&](int done, int total) {
    if (terminal) fmt::print(stderr, "\rrefining on the full model: {}/{}", done, total);
  };
  auto found = planner::searchConfigurations(args.request, progress);
  if (terminal) fmt::print(stderr, "\n");
  if (!found) return reportError(found.error());
  if (!found->best) {
    return reportError(
        Error{planner::nothingFitsAdvice(*found, std::max(args.request.base.nodes, 1))});
  }
  const nlohmann::ordered_json optimal =
      exporters::mindspeedOptimalConfig(*found->best, *found->estimate, found->bestSeconds);
  if (auto written = writeFileAtomically(args.out, optimal.dump(4) + "\n"); !written) {
    return reportError(written.error().in("--out"));
  }
  if (args.json) {
    fmt::print("{}\n", optimal.dump(4));
    return kExitOk;
  }
  printReport(*found, args);
  return kExitOk;
}

}  // namespace

void addSearchVerb(CLI::App& app, Action& action) {
  CLI::App* verb = app.add_subcommand(
      "search",
      "Search TP/PP/DP/VPP/micro-batch/recompute/ZeRO for the fastest configuration that fits "
      "(seed 003); writes auto_parallel_search_optimal_config.json");
  auto args = std::make_shared<SearchArgs>();
  planner::SearchRequest& request = args->request;
  addConfigurationOptions(*verb, request.base, args->flags);
  verb->add_option("--top", args->top, "configurations to list")->capture_default_str();
  verb->add_option("--out", args->out, "where to write the optimal configuration")
      ->capture_default_str();
  verb->add_flag("--json", args->json,
                 "print the optimal configuration JSON instead of the report");
  verb->add_option("--profile", request.profilePath,
                   "measured block table (docs/profile-table.md): its block times and "
                   "activations replace the analytic ones");
  verb->add_option("--nnodes", request.samplingNodes,
                   "nodes of the cluster the --profile table was measured on")
      ->check(positive());
  verb->add_option("--nproc-per-node", request.samplingDevicesPerNode,
                   "devices per node of the cluster the --profile table was measured on")
      ->check(positive());
  verb->callback([&action, args] { action = [args] { return runSearch(*args); }; });
}

}  // namespace autopar::cli
