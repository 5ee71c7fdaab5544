/// `autopar plan`: plan a model on a cluster (annotations, a search, plan features) and print the
/// plan with its estimate.

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>

#include "cli/html_report_file.h"
#include "cli/progress_line.h"
#include "cli/training_flags.h"
#include "cli/verbs.h"
#include "export/html_report_content.h"
#include "export/mindspore_strategy.h"
#include "export/plan_report.h"
#include "plan/plan_json.h"
#include "planner/fit_advice.h"
#include "planner/mem_coeff_auto.h"
#include "planner/plan_assembly.h"
#include "planner/plan_evaluation.h"
#include "planner/run_yaml.h"
#include "util/atomic_file.h"

namespace autopar::cli {

namespace {

/// --tp, --dp and --sequence-parallel as given (0 and false: not given).
struct DegreeFlags {
  int64_t tp = 0;
  int64_t dp = 0;
  bool sequenceParallel = false;
};

/// The Megatron-style annotation the flags ask for; none without --tp.
Status applyDegreeFlags(const DegreeFlags& flags, planner::ModelOptions& model) {
  if (flags.tp == 0) {
    if (flags.dp > 0) return Error{"--dp: needs --tp (without it every device is data parallel)"};
    if (flags.sequenceParallel) return Error{"--sequence-parallel: needs --tp"};
    return {};
  }
  model.parallel = ir::ParallelConfig{.tp = flags.tp,
                                      .dp = std::max<int64_t>(flags.dp, 1),
                                      .sequenceParallel = flags.sequenceParallel};
  model.dataParallelFromDevices = flags.dp == 0;
  return {};
}

/// Plans `options`, with a progress line for a search; under --mem-coeff auto, the rung chosen
/// (planner/mem_coeff_auto.h), whose options replace `options` and whose line goes to `note`.
Expected<planner::Evaluated> evaluatePlan(planner::PlanOptions& options,
                                          const cluster::Cluster& cluster, std::string& note) {
  if (options.memCoeffRule != frontend::MemCoeffRule::kGiven) {
    const ProgressLine progress("choosing mem_coeff (planning each rung)", 0);
    auto choice = planner::chooseMemCoeff(options, cluster);
    if (!choice) return choice.error();
    options = std::move(choice->options);
    note = std::move(choice->summary);
    return std::move(choice->evaluated);
  }
  std::optional<ProgressLine> progress;
  if (options.search == "ilp") {
    progress.emplace("solving the ILP", options.ilpTimeLimit);
  } else if (options.search != "semi_auto") {
    progress.emplace(fmt::format("searching ({})", options.search), 0);
  }
  return planner::evaluate(options, cluster, options.modelOptions);
}

int runPlan(planner::PlanOptions options, const std::string& reportPath) {
  auto cluster = planner::loadCluster(options.cluster, options.nodes, options.devices);
  if (!cluster) return reportError(cluster.error());
  if (!options.config.empty()) {
    auto config = planner::applyRunYaml(options, cluster->numDevices);
    if (!config) return reportError(config.error());
    planner::capDeviceMemory(options, *cluster);
    planner::applyAutoPipeline(options, *config, *cluster);
  }
  if (options.model.empty())
    return reportError(Error{"--model: required (or --config with a model)"});
  std::string memCoeffNote;
  auto evaluated = evaluatePlan(options, *cluster, memCoeffNote);
  if (!evaluated) return reportError(evaluated.error());
  plan::Plan result = planner::planOf(*evaluated, options, *cluster);
  std::optional<planner::FitAdvice> advice;
  if (!result.estimate.fits) {
    // Re-planning can take seconds on large models: a progress line when stderr is a terminal.
    const bool terminal = isatty(STDERR_FILENO) != 0;
    advice = planner::adviseFit(options, *cluster, [terminal](int planned) {
      if (terminal) {
        fmt::print(stderr, "\rdoes not fit; re-planning with fixes: {} plans", planned);
      }
    });
    if (terminal) fmt::print(stderr, "\r\033[K");
    result.fixes = advice->fixes;
  }
  // The plan JSON only where it is written or printed: LLaMA2-70B over 1,024 devices plans in
  // 0.41 s without it and 0.53 s with it (a 5 MB file).
  const bool writes = !options.out.empty() && result.estimate.fits;
  const std::string json = writes || options.json ? plan::planToJson(result).dump(2) : "";
  // A plan that does not fit is not written: it would replace a good one the user has there.
  if (writes) {
    if (auto written = writeFileAtomically(options.out, json + "\n"); !written) {
      return reportError(written.error().in("--out"));
    }
  }
  if (!options.mindsporeStrategyOut.empty() && result.estimate.fits) {
    const std::string strategies = exporters::mindsporeOpStrategy(result).dump() + "\n";
    if (auto written = writeFileAtomically(options.mindsporeStrategyOut, strategies); !written) {
      return reportError(written.error().in("--mindspore-strategy"));
    }
  }
  const exporters::ReportHeader header{options.model, cluster->name, cluster->device.name,
                                       evaluated->model.graph.parameterCount()};
  if (!reportPath.empty()) {
    if (auto written =
            writeHtmlReport(reportPath, exporters::planHtmlReport(result, *evaluated, header));
        !written) {
      return reportError(written.error());
    }
  }
  if (options.json) {
    fmt::print("{}\n", json);
  } else {
    if (options.explain) {
      for (const auto& line : evaluated->outcome.explanation) fmt::print("{}\n", line);
      fmt::print("\n");
    }
    if (!options.configNote.empty()) fmt::print("{}\n\n", options.configNote);
    if (!memCoeffNote.empty()) fmt::print("{}\n\n", memCoeffNote);
    fmt::print("{}", exporters::formatPlanReport(result, header));
  }
  if (result.estimate.fits) return kExitOk;
  fmt::print(
      stderr,
      "autopar: does not fit: peak memory {} exceeds the {} of one {} (parameters+"
      "gradients+optimizer states {}, activations {})\n",
      planner::formatBytes(result.estimate.peakMemoryBytes),
      planner::formatBytes(cluster->device.memoryBytes), cluster->device.name,
      planner::formatBytes(result.estimate.memory.parameters + result.estimate.memory.gradients +
                           result.estimate.memory.optimizerStates),
      planner::formatBytes(result.estimate.memory.activations));
  if (advice->fixes.empty()) fmt::print(stderr, "autopar: {}\n", advice->unmet);
  for (size_t i = 0; i < advice->fixes.size(); ++i) {
    fmt::print(stderr, "{} {}\n", i == 0 ? "autopar: fits with" : "                or",
               planner::formatFix(advice->fixes[i]));
  }
  if (!options.out.empty()) fmt::print(stderr, "autopar: {} not written\n", options.out);
  return kExitDoesNotFit;
}

}  // namespace

void addPlanVerb(CLI::App& app, Action& action) {
  auto options = std::make_shared<planner::PlanOptions>();
  auto frameworkName = std::make_shared<std::string>();
  auto degrees = std::make_shared<DegreeFlags>();
  CLI::App* verb = app.add_subcommand(
      "plan",
      "Evaluate a semi-auto plan: annotated ops keep their strategy, the rest run data "
      "parallel. Prints strategies, redistributions, step time and memory.");
  verb->add_option("--model", options->model,
                   "preset name (autopar models), graph .json or .onnx (or set by --config)");
  verb->add_option("--config", options->config,
                   "MindFormers-style run yaml: parallel_mode, search_mode, mem_coeff, "
                   "data_parallel, model_parallel, batch and model (docs/mindformers-yaml.md)");
  verb->add_option("--cluster", options->cluster, "preset name (autopar clusters) or .yaml spec")
      ->capture_default_str();
  verb->add_option("--nodes", options->nodes, "number of nodes of a preset")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--devices", options->devices, "use the first N devices")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--micro-batch", options->modelOptions.microBatch, "micro-batch size")
      ->check(positiveAtMost(limits::kMaxMicroBatch));
  verb->add_option("--seq", options->modelOptions.sequence, "sequence length")
      ->check(positiveAtMost(limits::kMaxSequence));
  verb->add_option("--tp", degrees->tp,
                   "annotate a transformer preset Megatron-style with this tensor-parallel degree")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--dp", degrees->dp, "data-parallel degree with --tp (default: devices / tp)")
      ->check(positive());
  verb->add_option("--shard", options->shards, "OP=STRATEGY, e.g. dense1.matmul=((2,4),(4,1))");
  verb->add_flag("--alltoall", options->enableAllToAll, "let redistribution use all-to-all");
  verb->add_option("--search", options->search,
                   "data_parallel | semi_auto | sharding_propagation | recursive_programming | ilp")
      ->capture_default_str();
  verb->add_flag("--ilp-tie-layers", options->ilpTieLayers,
                 "--search ilp: the layers of each stack share one decision (a smaller problem)");
  verb->add_option("--ilp-time", options->ilpTimeLimit,
                   "--search ilp: seconds CBC may take; past them the plan is the best found")
      ->check(positive())
      ->capture_default_str();
  verb->add_option_function<std::string>(
          "--mem-coeff",
          [options](const std::string& value) {
            options->memCoeffRule = value == "auto"      ? frontend::MemCoeffRule::kAuto
                                    : value == "fastest" ? frontend::MemCoeffRule::kFastest
                                                         : frontend::MemCoeffRule::kGiven;
            if (options->memCoeffRule == frontend::MemCoeffRule::kGiven) {
              options->memCoeff = std::stod(value);
            }
          },
          "recursive_programming: price of replicated weights against data parallelism "
          "(seed 000; higher leads to model parallelism and less memory); auto: the smallest "
          "that fits; fastest: the fastest that fits (docs/recursive-programming.md)")
      ->check(CLI::Validator(
          [](const std::string& value) {
            if (value == "auto" || value == "fastest") return std::string();
            return positive()(const_cast<std::string&>(value)).empty()
                       ? std::string()
                       : fmt::format("expected a positive number, auto or fastest, got {}", value);
          },
          "POSITIVE, auto or fastest"))
      ->default_str("0.1");
  verb->add_flag("--explain", options->explain, "print the search's decisions, one line per op");
  addTrainingFlags(*verb, options->training);
  verb->add_flag("--sequence-parallel", degrees->sequenceParallel,
                 "with --tp: split norms, dropouts and residuals along the sequence (Megatron-LM)");
  verb->add_option("--framework", *frameworkName,
                   "price the plan with this framework's code path (docs/frameworks.md): " +
                       cost::frameworkNames() + "; default: the plan's features only");
  verb->add_option("--out", options->out, "write the plan JSON here");
  verb->add_option("--mindspore-strategy", options->mindsporeStrategyOut,
                   "also write the op strategies as the JSON MindSpore loads with "
                   "set_op_strategy_config(mode=\"LOAD\", path=...) (when the plan fits)");
  verb->add_option("--strategy-file", options->strategyFile,
                   "read op strategies from such a MindSpore JSON as annotations (--shard of the "
                   "same op wins)");
  verb->add_flag("--json", options->json, "print the plan JSON instead of the report");
  auto reportPath = std::make_shared<std::string>();
  addReportOption(*verb, *reportPath);
  verb->callback([&action, options, frameworkName, degrees, reportPath, verb] {
    for (const CLI::Option* option : verb->get_options()) {
      if (option->count() > 0 && !option->get_lnames().empty()) {
        options->givenFlags.insert("--" + option->get_lnames().front());
      }
    }
    action = [options, frameworkName, degrees, reportPath] {
      if (auto status = applyDegreeFlags(*degrees, options->modelOptions); !status) {
        return reportError(status.error());
      }
      if (!frameworkName->empty()) {
        auto framework = cost::parseFramework(*frameworkName);
        if (!framework) return reportError(framework.error());
        options->framework = *framework;
      }
      return runPlan(*options, *reportPath);
    };
  });
}

}  // namespace autopar::cli
