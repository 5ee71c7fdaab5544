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
#include "export/plan_report.h"
#include "plan/plan_json.h"
#include "planner/configuration_search.h"
#include "planner/graph_search.h"
#include "planner/inputs.h"
#include "planner/plan_assembly.h"
#include "util/atomic_file.h"

namespace autopar::cli {

namespace {

constexpr const char* kOptimalConfigFile = "auto_parallel_search_optimal_config.json";
constexpr const char* kGraphPlanFile = "autopar_plan.json";

/// How many of the leaders' placements the report lists.
constexpr int kPlacedCandidates = 8;

struct SearchArgs {
  planner::SearchRequest request;
  int top = 10;
  std::string out;  ///< empty: kOptimalConfigFile, or kGraphPlanFile for a graph
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

/// The graph search's ranking: stages, micro-batches, recompute, step, throughput, peak.
void printGraphRanking(const planner::GraphSearch& found, int top) {
  fmt::print("{:>4} {:>6} {:>6} {:>9} {:>11} {:>12} {:>11}\n", "rank", "stages", "sched",
             "recompute", "step", "samples/s", "peak");
  for (size_t i = 0; i < found.ranked.size() && static_cast<int>(i) < top; ++i) {
    const auto& ranked = found.ranked[i];
    const double samples =
        static_cast<double>(found.batch * found.microBatches) / ranked.stepSeconds;
    const std::string& schedule = ranked.candidate.stages == 1 ? "-" : ranked.candidate.schedule;
    fmt::print("{:>4} {:>6} {:>6} {:>9} {:>11} {:>12.1f} {:>11}\n", i + 1, ranked.candidate.stages,
               schedule, ranked.candidate.recompute, planner::formatSeconds(ranked.stepSeconds),
               samples, planner::formatBytes(ranked.peakBytes));
  }
}

/// `autopar search` on a graph JSON or ONNX model (planner/graph_search.h): writes the winner's
/// plan JSON and prints the ranking and its plan report.
int runGraphSearch(const SearchArgs& args) {
  const planner::MegatronConfig& base = args.request.base;
  planner::GraphSearchRequest request;
  request.model = base.model;
  request.cluster = base.cluster;
  request.nodes = std::max(base.nodes, 1);
  request.devicesPerNode = base.devicesPerNode;
  request.opSearch = base.opSearch;
  request.globalBatch = base.gbs;
  auto found = planner::searchGraph(request);
  if (!found) return reportError(found.error());
  if (!found->best) {
    const std::string leanest =
        found->leanest
            ? fmt::format("the leanest ({} stages, recompute {}) needs {} per device of {}",
                          found->leanest->candidate.stages, found->leanest->candidate.recompute,
                          planner::formatBytes(found->leanest->peakBytes),
                          planner::formatBytes(found->cluster.device.memoryBytes))
            : "no configuration could be evaluated";
    return reportError(Error{fmt::format(
        "nothing fits: {}; add devices (--nodes) or shard the largest parameters with a "
        "--op-search",
        leanest)});
  }
  const std::string out = args.out.empty() ? kGraphPlanFile : args.out;
  const plan::Plan plan = planner::planOf(*found->best, found->bestOptions, found->cluster);
  if (auto written = writeFileAtomically(out, plan::planToJson(plan).dump(2) + "\n"); !written) {
    return reportError(written.error().in("--out"));
  }
  fmt::print(
      "autopar search: {} on {} ({} x {}), global batch {}: {} micro-batches of {} samples\n",
      base.model, found->cluster.name, found->cluster.numDevices, found->cluster.device.name,
      base.gbs, found->microBatches, found->batch);
  if (found->blocks == 0) {
    fmt::print(
        "no block tags of the form <stack>.<index> (e.g. \"encoder.layer.3\"): the graph is "
        "searched as one block, without pipelining\n");
  } else {
    fmt::print("{} blocks placed over pipeline stages\n", found->blocks);
  }
  fmt::print(
      "each stage's ops sharded over its devices by {}; {} configurations evaluated on the full "
      "model ({} fit{})\n\n",
      base.opSearch == planner::OpSearch::kMegatron
          ? std::string("the file's annotations, the rest data parallel (semi_auto)")
          : fmt::format("--op-search {}", planner::opSearchName(base.opSearch)),
      found->evaluated, found->ranked.size(),
      found->skipped > 0
          ? fmt::format("; {} refused, the first: {}", found->skipped, found->firstError)
          : "");
  printGraphRanking(*found, args.top);
  exporters::ReportHeader header{base.model, found->cluster.name, found->cluster.device.name,
                                 found->best->model.graph.parameterCount()};
  fmt::print("\nBest configuration:\n\n{}", exporters::formatPlanReport(plan, header));
  fmt::print("\nwrote {}\n", out);
  return kExitOk;
}

int runSearch(SearchArgs args) {
  if (auto status = applyConfigurationFlags(args.flags, args.request.base); !status) {
    return reportError(status.error());
  }
  if (planner::isGraphModel(args.request.base.model)) return runGraphSearch(args);
  if (args.out.empty()) args.out = kOptimalConfigFile;
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
  verb->add_option("--out", args->out,
                   fmt::format("where to write the optimal configuration (default {}; for a "
                               "graph, its plan JSON, default {})",
                               kOptimalConfigFile, kGraphPlanFile));
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
