/// `autopar search`: runs the planner's configuration search
/// (planner/configuration/configuration_search.h), prints the top configurations, the best one's
/// memory per stage and its Megatron-LM, MindSpeed-MM and MindSpore settings, and writes seed 003's
/// auto_parallel_search_optimal_config.json.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/configuration_options.h"
#include "cli/html_report_file.h"
#include "cli/verbs.h"
#include "export/group_report.h"
#include "export/html_report_content.h"
#include "export/launch_script.h"
#include "export/mindformers_yaml.h"
#include "export/mindspeed_json.h"
#include "export/search_report.h"
#include "plan/plan_json.h"
#include "planner/configuration/configuration_search.h"
#include "planner/configuration/group_search.h"
#include "planner/graph_search.h"
#include "planner/inputs.h"
#include "planner/plan_assembly.h"
#include "util/atomic_file.h"

namespace autopar::cli {

namespace {

/// The model and cluster an export names.
plan::InputsRecord namesOf(const planner::MegatronConfig& config) {
  plan::InputsRecord inputs;
  inputs.model = config.model;
  inputs.cluster = config.cluster;
  return inputs;
}

constexpr const char* kOptimalConfigFile = "auto_parallel_search_optimal_config.json";
constexpr const char* kGraphPlanFile = "autopar_plan.json";
/// Where --auto-parallel-mm keeps the blocks it measured (beside --out).
constexpr const char* kSampledTableFile = "autopar_sampled_blocks.json";

struct SearchArgs {
  planner::SearchRequest request;
  int top = 10;
  std::string out;  ///< empty: kOptimalConfigFile, or kGraphPlanFile for a graph
  ConfigurationFlags flags;
  bool json = false;
  std::string objective = "fastest";  ///< --objective, on a cluster of device groups
  bool crossGroup = true;             ///< --cross-group
  /// The availability question (--available, --min-tokens-per-s, --max-dollars-per-hour).
  std::string available;
  double minTokensPerSecond = 0;
  double maxDollarsPerHour = 0;
  std::vector<std::string> schedules;  ///< --schedules
  std::string launchScript;            ///< --launch-script
  std::string mindformersYaml;         ///< --mindformers-yaml
  std::string reportPath;              ///< --report
  /// Seed 003's --auto-parallel-mm: measure the blocks on the sampling cluster first (every node
  /// runs the command; node 0 searches).
  bool autoParallelMm = false;
  int nodeRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
};

/// `autopar profile`'s arguments for --auto-parallel-mm: the settings planner::sampledDegrees
/// names, each with and without sequence parallelism.
Expected<std::vector<std::string>> profileArguments(const SearchArgs& args,
                                                    const std::string& table) {
  const planner::SearchRequest& request = args.request;
  auto degrees =
      planner::sampledDegrees(request.base.model, request.samplingDevicesPerNode, request.base.gbs);
  if (!degrees) return degrees.error();
  std::vector<std::string> arguments{"profile",
                                     "--model",
                                     request.base.model,
                                     "--cluster",
                                     request.base.cluster,
                                     "--tp",
                                     fmt::format("{}", fmt::join(degrees->tensorParallel, ",")),
                                     "--mbs",
                                     fmt::format("{}", fmt::join(degrees->microBatches, ",")),
                                     "--sequence-parallel=both",
                                     "--nnodes",
                                     std::to_string(std::max(request.samplingNodes, 1)),
                                     "--node-rank",
                                     std::to_string(args.nodeRank),
                                     "--nproc-per-node",
                                     std::to_string(request.samplingDevicesPerNode),
                                     "--master-addr",
                                     args.masterAddr,
                                     "--out",
                                     table};
  if (args.masterPort > 0) {
    arguments.insert(arguments.end(), {"--master-port", std::to_string(args.masterPort)});
  }
  if (request.base.seq > 0) {
    arguments.insert(arguments.end(), {"--seq", std::to_string(request.base.seq)});
  }
  return arguments;
}

/// Writes the winner's launch script (export/launch_script.h) to `path`.
Status writeLaunchScript(const std::string& path, const planner::MegatronConfig& best,
                         const planner::ConfigEstimate& estimate) {
  auto model = planner::transformerOf(best);
  if (!model) return model.error();
  const int64_t perNode = std::min<int64_t>(estimate.cluster.devicesPerNode, estimate.worldSize);
  auto script =
      exporters::launchScript(best, namesOf(best), *model, planner::layersPerVirtualStage(estimate),
                              estimate.worldSize / perNode, perNode);
  if (!script) return script.error();
  if (auto written = writeFileAtomically(path, *script); !written) {
    return written.error().in("--launch-script");
  }
  return {};
}

/// Writes the winner's complete MindFormers run yaml (export/mindformers_yaml.h) to `path`.
Status writeMindFormersYaml(const std::string& path, const planner::MegatronConfig& best,
                            const planner::ConfigEstimate& estimate) {
  auto model = planner::transformerOf(best);
  if (!model) return model.error();
  const std::string yaml = exporters::mindformersRunYaml(best, namesOf(best), *model,
                                                         estimate.microBatches, estimate.sequence);
  if (auto written = writeFileAtomically(path, yaml); !written) {
    return written.error().in("--mindformers-yaml");
  }
  return {};
}

/// --auto-parallel-mm: the sampling cluster measures the blocks (autopar-runtime profile, one
/// share per node), and node 0 goes on to search the simulated cluster on the table, which it
/// keeps beside --out (a later search can reuse it with --profile) and names in
/// args.request.profilePath. Returns the exit status where the command ends here: an error, or a
/// node other than 0.
std::optional<int> sampleBlocks(SearchArgs& args) {
  if (!args.request.profilePath.empty()) {
    return reportError(Error{"--profile: --auto-parallel-mm measures the blocks itself"});
  }
  if (args.request.samplingDevicesPerNode == 0) {
    return reportError(
        Error{"--auto-parallel-mm: needs --nproc-per-node (the sampling node's devices)"});
  }
  const std::string table =
      (std::filesystem::path(args.out).parent_path() / kSampledTableFile).string();
  auto arguments = profileArguments(args, table);
  if (!arguments) return reportError(arguments.error());
  if (const int profiled = runRuntime(*arguments); profiled != kExitOk) return profiled;
  if (args.nodeRank != 0) {
    fmt::print(verbOut(), "node {}: sampling done; node 0 runs the search\n", args.nodeRank);
    return kExitOk;
  }
  args.request.profilePath = table;
  return std::nullopt;
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
  request.progress = [](int, int) { stopIfCancelled(); };
  auto found = planner::searchGraph(request);
  if (!found) return reportError(found.error());
  if (!found->best) {
    return reportDoesNotFit(planner::graphNothingFitsAdvice(*found));
  }
  const std::string out = args.out.empty() ? kGraphPlanFile : args.out;
  const plan::Plan plan = planner::planOf(*found->best, found->bestOptions, found->cluster);
  if (auto written = writeFileAtomically(out, plan::planToJson(plan).dump(2) + "\n"); !written) {
    return reportError(written.error().in("--out"));
  }
  exporters::SearchReportContext context{base.model, base.gbs, "", args.top};
  if (!args.reportPath.empty()) {
    if (auto written = writeHtmlReport(args.reportPath,
                                       exporters::graphSearchHtmlReport(*found, plan, context));
        !written) {
      return reportError(written.error());
    }
  }
  fmt::print(verbOut(), "{}", exporters::formatGraphSearchReport(*found, plan, context));
  fmt::print(verbOut(), "\nwrote {}\n", out);
  if (!args.reportPath.empty()) fmt::print(verbOut(), "wrote {}\n", args.reportPath);
  return kExitOk;
}

/// Writes a search's winner: seed 003's JSON to --out, and the launch script, the MindFormers
/// yaml and the HTML report where asked. Returns the JSON.
Expected<nlohmann::ordered_json> writeWinner(const SearchArgs& args,
                                             const planner::ConfigurationSearch& found,
                                             const exporters::SearchReportContext& context) {
  const planner::MegatronConfig& best = *found.best;
  const planner::ConfigEstimate& estimate = *found.estimate;
  nlohmann::ordered_json optimal =
      exporters::mindspeedOptimalConfig(best, planner::layersPerStage(estimate, best.pp, "llm"),
                                        planner::layersPerStage(estimate, best.pp, "vit"),
                                        estimate.sequence, estimate.worldSize, found.bestSeconds);
  if (auto written = writeFileAtomically(args.out, optimal.dump(4) + "\n"); !written) {
    return written.error().in("--out");
  }
  if (!args.launchScript.empty()) {
    if (auto written = writeLaunchScript(args.launchScript, best, estimate); !written) {
      return written.error();
    }
  }
  if (!args.mindformersYaml.empty()) {
    if (auto written = writeMindFormersYaml(args.mindformersYaml, best, estimate); !written) {
      return written.error();
    }
  }
  if (!args.reportPath.empty()) {
    if (auto written =
            writeHtmlReport(args.reportPath, exporters::searchHtmlReport(found, context));
        !written) {
      return written.error();
    }
  }
  return optimal;
}

/// After the report: "wrote FILE" for each file writeWinner wrote.
void printWritten(const SearchArgs& args) {
  fmt::print(verbOut(), "\nwrote {}\n", args.out);
  for (const std::string* path : {&args.launchScript, &args.mindformersYaml, &args.reportPath}) {
    if (!path->empty()) fmt::print(verbOut(), "wrote {}\n", *path);
  }
}

/// Writes a plan across device groups' JSON to --out and, where asked, the HTML report `report`
/// makes for the search's context.
template <class MakeReport>
Status writePlanAcrossGroups(const SearchArgs& args, const nlohmann::ordered_json& json,
                             const MakeReport& report) {
  if (auto written = writeFileAtomically(args.out, json.dump(4) + "\n"); !written) {
    return written.error().in("--out");
  }
  if (args.reportPath.empty()) return {};
  const exporters::SearchReportContext context{args.request.base.model, args.request.base.gbs,
                                               args.request.profilePath, args.top};
  return writeHtmlReport(args.reportPath, report(context));
}

/// Writes a plan across device groups: its JSON (exporters::sharedPlanJson) to --out. No
/// framework runs one model's data-parallel replicas on uneven shares of the batch, so the
/// framework exports are refused in one line that names the way to a one-group plan.
Expected<nlohmann::ordered_json> writeSharedPlan(const SearchArgs& args,
                                                 const planner::GroupSearch& search,
                                                 const planner::SharedPlan& plan) {
  for (const auto& [flag, path] : {std::pair{"--launch-script", &args.launchScript},
                                   std::pair{"--mindformers-yaml", &args.mindformersYaml}}) {
    if (!path->empty()) {
      return Error{fmt::format(
          "{}: the chosen plan shares the batch unevenly across device groups, which no "
          "framework runs (Megatron-LM, torchtitan and MindFormers split it evenly over "
          "identical replicas); add --no-cross-group to plan on one group",
          flag)};
    }
  }
  nlohmann::ordered_json json = exporters::sharedPlanJson(search, plan);
  if (auto written = writePlanAcrossGroups(args, json,
                                           [&](const exporters::SearchReportContext& context) {
                                             return exporters::sharedPlanHtmlReport(search, plan,
                                                                                    context);
                                           });
      !written) {
    return written.error();
  }
  return json;
}

/// Writes a pipeline across device groups: its JSON (exporters::pipelinePlanJson) to --out, its
/// Megatron-LM launch script and HTML report where asked; MindFormers' yaml is refused in one
/// line (its pipeline is one device kind's).
Expected<nlohmann::ordered_json> writePipelinePlan(const SearchArgs& args,
                                                   const planner::GroupSearch& search,
                                                   const planner::SplitPipeline& pipeline) {
  if (!args.mindformersYaml.empty()) {
    return Error{
        "--mindformers-yaml: the chosen plan pipelines across device groups, which a "
        "MindFormers run yaml cannot place; add --no-cross-group to plan on one group"};
  }
  std::optional<std::string> script;
  if (!args.launchScript.empty()) {
    auto made = exporters::pipelineLaunchScript(search, pipeline, args.request.base.model);
    if (!made) return made.error();
    script = std::move(*made);
  }
  nlohmann::ordered_json json = exporters::pipelinePlanJson(search, pipeline);
  if (auto written = writePlanAcrossGroups(args, json,
                                           [&](const exporters::SearchReportContext& context) {
                                             return exporters::pipelinePlanHtmlReport(
                                                 search, pipeline, context);
                                           });
      !written) {
    return written.error();
  }
  if (script) {
    if (auto written = writeFileAtomically(args.launchScript, *script); !written) {
      return written.error().in("--launch-script");
    }
  }
  return json;
}

/// `autopar search` on a cluster of device groups (planner/configuration/group_search.h): the
/// plan the objective picks is written: a group's winner, exported as on one group, or a plan
/// across groups (writeSharedPlan).
int runGroupSearch(SearchArgs& args, const cluster::ClusterGroups& groups,
                   const planner::GroupSearchOptions& options) {
  if (planner::isGraphModel(args.request.base.model) || args.autoParallelMm) {
    return reportError(Error{fmt::format(
        "--cluster {}: device groups are searched for a transformer (a preset, config.json or "
        "dimensions JSON), without --auto-parallel-mm",
        args.request.base.cluster)});
  }
  auto found = planner::searchGroups(args.request, groups, options);
  if (!found) return reportError(found.error());
  const exporters::SearchReportContext context{args.request.base.model, args.request.base.gbs,
                                               args.request.profilePath, args.top};
  if (!found->chosen) {
    if (found->devices && !found->devices->unmet.empty()) {
      return reportDoesNotFit(found->devices->unmet);
    }
    return reportDoesNotFit(fmt::format("nothing fits on {}:\n{}", groups.name,
                                        exporters::formatGroupSearch(*found, context)));
  }
  if (args.out.empty()) args.out = kOptimalConfigFile;
  const planner::GroupSearch::Choice chosen = *found->chosen;
  using Choice = planner::GroupSearch::Choice;
  auto written = chosen.kind == Choice::kShared
                     ? writeSharedPlan(args, *found, found->shared[chosen.index])
                 : chosen.kind == Choice::kPipeline
                     ? writePipelinePlan(args, *found, found->pipelines[chosen.index])
                     : writeWinner(args, *found->groups[chosen.index].found, context);
  if (!written) return reportError(written.error());
  if (args.json) {
    fmt::print(verbOut(), "{}\n", written->dump(4));
    return kExitOk;
  }
  fmt::print(verbOut(), "{}", exporters::formatGroupSearch(*found, context));
  printWritten(args);
  return kExitOk;
}

int runSearch(SearchArgs args) {
  if (auto status = applyConfigurationFlags(args.flags, args.request.base); !status) {
    return reportError(status.error());
  }
  for (const std::string& name : args.schedules) {
    auto schedule = ir::parseSchedule(name);
    if (!schedule) return reportError(schedule.error().in("--schedules"));
    args.request.schedules.push_back(*schedule);
  }
  auto objective = planner::parseObjective(args.objective);
  if (!objective) return reportError(objective.error());
  auto groups = planner::loadClusterGroups(args.request.base.cluster);
  if (!groups) return reportError(groups.error().in("--cluster"));
  const bool availability =
      !args.available.empty() || args.minTokensPerSecond > 0 || args.maxDollarsPerHour > 0;
  if (*groups) {
    planner::GroupSearchOptions options{*objective, args.crossGroup, std::nullopt};
    if (availability) {
      auto offered = planner::parseAvailability(args.available, **groups);
      if (!offered) return reportError(offered.error());
      offered->minTokensPerSecond = args.minTokensPerSecond;
      offered->maxDollarsPerHour = args.maxDollarsPerHour;
      options.availability = std::move(*offered);
    }
    return runGroupSearch(args, **groups, options);
  }
  if (*objective != planner::Objective::kFastest || !args.crossGroup || availability) {
    return reportError(
        Error{"--objective, --no-cross-group, --available, --min-tokens-per-s and "
              "--max-dollars-per-hour choose among device groups; --cluster names one device "
              "kind"});
  }
  if (planner::isGraphModel(args.request.base.model)) {
    if (args.autoParallelMm) {
      return reportError(
          Error{"--auto-parallel-mm: measures a transformer's blocks (a preset, "
                "config.json or dimensions JSON); a graph is searched analytically"});
    }
    return runGraphSearch(args);
  }

  if (args.out.empty()) args.out = kOptimalConfigFile;
  if (args.autoParallelMm) {
    if (std::optional<int> ended = sampleBlocks(args)) return *ended;
  }
  const bool terminal = errIsTerminal();
  auto progress = [&](int done, int total) {
    stopIfCancelled();
    if (terminal) fmt::print(verbErr(), "\rrefining on the full model: {}/{}", done, total);
  };
  auto found = planner::searchConfigurations(args.request, progress);
  if (terminal) fmt::print(verbErr(), "\n");
  if (!found) return reportError(found.error());
  if (!found->best) {
    return reportDoesNotFit(
        planner::nothingFitsAdvice(*found, std::max(args.request.base.nodes, 1)));
  }
  const exporters::SearchReportContext context{args.request.base.model, args.request.base.gbs,
                                               args.request.profilePath, args.top};
  auto optimal = writeWinner(args, *found, context);
  if (!optimal) return reportError(optimal.error());
  if (args.json) {
    fmt::print(verbOut(), "{}\n", optimal->dump(4));
    return kExitOk;
  }
  fmt::print(verbOut(), "{}", exporters::formatSearchReport(*found, context));
  printWritten(args);
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
  verb->add_flag("--zero-bubble", request.zeroBubble,
                 "also consider the zero-bubble H1 schedule (needs Qi et al.'s patch to "
                 "Megatron-LM / Megatron-Core: sail-sg/zero-bubble-pipeline-parallelism)");
  verb->add_option("--schedules", args->schedules,
                   "pipeline schedules the search may pick, e.g. 1f1b,interleaved (default: the "
                   "framework's: 1f1b and interleaved, zb-h1 with --zero-bubble)")
      ->delimiter(',');
  verb->add_option("--top", args->top, "configurations to list")
      ->check(positiveAtMost(100'000))
      ->capture_default_str();
  verb->add_option("--out", args->out,
                   fmt::format("where to write the optimal configuration (default {}; for a "
                               "graph, its plan JSON, default {})",
                               kOptimalConfigFile, kGraphPlanFile));
  verb->add_option("--launch-script", args->launchScript,
                   "also write a bash script that launches the best configuration with torchrun "
                   "on every node (Megatron-LM's pretrain_gpt.py, or torchtitan's trainer, by "
                   "--framework)");
  verb->add_flag("--json", args->json,
                 "print the optimal configuration JSON instead of the report");
  verb->add_option("--objective", args->objective,
                   "on a cluster of device groups (docs/cluster-format.md): the plan to take: "
                   "the fastest step (fastest) or the fewest dollars per million tokens "
                   "(cost, from the groups' price_per_device_hour)")
      ->capture_default_str();
  verb->add_flag("--cross-group,!--no-cross-group", args->crossGroup,
                 "on a cluster of device groups, also search plans whose data-parallel replicas "
                 "span groups, each group training its share of the batch (--no-cross-group: "
                 "each group alone)");
  verb->add_option("--available", args->available,
                   "on a cluster of device groups, the nodes on offer per group, e.g. "
                   "h100=2,a100=4 (groups left out offer none): the search chooses how many of "
                   "each to use (default with --min-tokens-per-s or --max-dollars-per-hour: "
                   "each group's size)");
  verb->add_option("--min-tokens-per-s", args->minTokensPerSecond,
                   "with device groups, a throughput floor the chosen devices must reach "
                   "(--objective cost: the cheapest token that trains this fast)")
      ->check(finiteIn(0, 1e12));
  verb->add_option("--max-dollars-per-hour", args->maxDollarsPerHour,
                   "with device groups, a budget the chosen devices must stay within "
                   "(--objective fastest: the fastest plan it buys)")
      ->check(finiteIn(0, 1e9));
  addReportOption(*verb, args->reportPath);
  verb->add_option("--mindformers-yaml", args->mindformersYaml,
                   "also write the best configuration as a complete MindFormers run yaml "
                   "(parallel, parallel_config, recompute_config, runner_config, model), which "
                   "`autopar plan --config` reads back");
  verb->add_option("--profile", request.profilePath,
                   "measured block table (docs/profile-table.md): its block times and "
                   "activations replace the analytic ones");
  verb->add_option("--nnodes", request.samplingNodes,
                   "nodes of the cluster the --profile table was measured on")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--nproc-per-node", request.samplingDevicesPerNode,
                   "devices per node of the cluster the --profile table was measured on")
      ->check(positiveAtMost(limits::kMaxDevicesPerNode));
  verb->add_flag("--auto-parallel-mm", args->autoParallelMm,
                 "seed 003: measure the blocks on the sampling cluster (--nnodes x "
                 "--nproc-per-node; every node runs this command) and search the simulated one "
                 "(--simulated-nnodes x --simulated-nproc-per-node) on the measurements");
  verb->add_option("--node-rank", args->nodeRank,
                   "with --auto-parallel-mm: this node's rank in the sampling cluster (0 searches)")
      ->check(CLI::NonNegativeNumber);
  verb->add_option("--master-addr", args->masterAddr,
                   "with --auto-parallel-mm: node 0's address (it hosts the store the nodes "
                   "exchange measurements through)")
      ->capture_default_str();
  verb->add_option("--master-port", args->masterPort,
                   "with --auto-parallel-mm: node 0's store port, the same on every node")
      ->check(CLI::Range(1, 65535));
  verb->callback([&action, args] { action = [args] { return runSearch(*args); }; });
}

}  // namespace autopar::cli
