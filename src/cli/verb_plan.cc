/// `autopar plan`: plan a model on a cluster (annotations, a search, plan features) and print the
/// plan with its estimate.

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>
#include <string_view>

#include "cli/configuration_options.h"
#include "cli/html_report_file.h"
#include "cli/progress_line.h"
#include "cli/training_flags.h"
#include "cli/verbs.h"
#include "export/html_report_content.h"
#include "export/megatron_args.h"
#include "export/mindspore_strategy.h"
#include "export/plan_report.h"
#include "ir/setting.h"
#include "layout/strategy.h"
#include "plan/plan_json.h"
#include "planner/fit_advice.h"
#include "planner/megatron_setup.h"
#include "planner/plan_request.h"
#include "util/atomic_file.h"
#include "util/limits.h"

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

/// --shard OP=STRATEGY, each a strategy override by op.
Status parseShards(const std::vector<std::string>& shards, planner::PlanOptions& options) {
  for (const std::string& text : shards) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error{fmt::format(
          "--shard '{}': expected OP=STRATEGY, e.g. dense1.matmul=((2,4),(4,1))", text)};
    }
    auto strategy = layout::parseStrategy(text.substr(eq + 1));
    if (!strategy) return strategy.error().in(fmt::format("--shard {}", text.substr(0, eq)));
    options.shards[text.substr(0, eq)] = std::move(*strategy);
  }
  return {};
}

/// Megatron-LM's arguments for the plan, one line, with what they cannot say on stderr.
Status writeMegatronArguments(const planner::PlannedRequest& planned) {
  plan::Plan exported = planned.plan;
  if (auto status =
          planner::withMegatronSetup(exported, planned.options, planned.evaluated.model.graphBatch);
      !status) {
    return status;
  }
  auto arguments = exporters::megatronArguments(exported);
  if (!arguments) return arguments.error();
  for (const std::string& note : exporters::megatronNotes(*exported.setup)) {
    fmt::print(verbErr(), "autopar: --megatron-args: note: {}\n", note);
  }
  return writeFileAtomically(planned.options.megatronArgsOut, *arguments + "\n");
}

int runPlan(planner::PlanOptions options, const std::string& reportPath) {
  // A progress line for each step that can take seconds, and while re-planning with fixes (on
  // large models that takes seconds), when stderr is a terminal.
  const bool terminal = errIsTerminal();
  planner::PlanObserver observer;
  observer.step = [](const std::string& step, double limitSeconds) {
    stopIfCancelled();
    return std::make_shared<ProgressLine>(step, limitSeconds);
  };
  observer.fixes = [terminal](int planned) {
    stopIfCancelled();
    if (terminal)
      fmt::print(verbErr(), "\rdoes not fit; re-planning with fixes: {} plans", planned);
  };
  auto planned = planner::planRequest(std::move(options), observer);
  if (!planned) return reportError(planned.error());
  if (planned->advice && terminal) fmt::print(verbErr(), "\r\033[K");
  const planner::PlanOptions& request = planned->options;
  const plan::Plan& result = planned->plan;
  const cluster::Cluster& cluster = planned->cluster;
  // The plan JSON only where it is written or printed: LLaMA2-70B over 1,024 devices plans in
  // 0.41 s without it and 0.53 s with it (a 5 MB file).
  const bool writes = !request.out.empty() && result.estimate.fits;
  const std::string json = writes || request.json ? plan::planToJson(result).dump(2) : "";
  // A plan that does not fit is not written: it would replace a good one the user has there.
  if (writes) {
    if (auto written = writeFileAtomically(request.out, json + "\n"); !written) {
      return reportError(written.error().in("--out"));
    }
  }
  if (!request.mindsporeStrategyOut.empty() && result.estimate.fits) {
    const std::string strategies = exporters::mindsporeOpStrategy(result).dump() + "\n";
    if (auto written = writeFileAtomically(request.mindsporeStrategyOut, strategies); !written) {
      return reportError(written.error().in("--mindspore-strategy"));
    }
  }
  if (!request.megatronArgsOut.empty() && result.estimate.fits) {
    if (auto written = writeMegatronArguments(*planned); !written) {
      return reportError(written.error().in("--megatron-args"));
    }
  }
  const exporters::ReportHeader header{request.model, cluster.name, cluster.device.name,
                                       planned->evaluated.model.graph.parameterCount()};
  if (!reportPath.empty()) {
    if (auto written = writeHtmlReport(
            reportPath, exporters::planHtmlReport(result, planned->evaluated, header,
                                                  planned->advice ? planned->advice->unmet : ""));
        !written) {
      return reportError(written.error());
    }
  }
  if (request.json) {
    fmt::print(verbOut(), "{}\n", json);
  } else {
    if (request.explain) {
      for (const auto& line : planned->evaluated.outcome.explanation)
        fmt::print(verbOut(), "{}\n", line);
      fmt::print(verbOut(), "\n");
    }
    if (!request.configNote.empty()) fmt::print(verbOut(), "{}\n\n", request.configNote);
    if (!planned->memCoeffNote.empty()) fmt::print(verbOut(), "{}\n\n", planned->memCoeffNote);
    fmt::print(verbOut(), "{}", exporters::formatPlanReport(result, header));
  }
  if (result.estimate.fits) return kExitOk;
  fmt::print(verbErr(),
             "autopar: does not fit: peak memory {} exceeds the {} of one {} (parameters+"
             "gradients+optimizer states {}, activations {})\n",
             planner::formatBytes(result.estimate.peakMemoryBytes),
             planner::formatBytes(cluster.device.memoryBytes), cluster.device.name,
             planner::formatBytes(result.estimate.memory.parameterBytes +
                                  result.estimate.memory.gradientBytes +
                                  result.estimate.memory.optimizerBytes),
             planner::formatBytes(result.estimate.memory.activationBytes));
  if (planned->advice->fixes.empty())
    fmt::print(verbErr(), "autopar: {}\n", planned->advice->unmet);
  for (size_t i = 0; i < planned->advice->fixes.size(); ++i) {
    fmt::print(verbErr(), "{} {}\n", i == 0 ? "autopar: fits with" : "                or",
               planner::formatFix(planned->advice->fixes[i]));
  }
  if (!request.out.empty()) fmt::print(verbErr(), "autopar: {} not written\n", request.out);
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
      ->check(positiveAtMost(limits::kMaxDevices));
  auto shards = std::make_shared<std::vector<std::string>>();
  verb->add_option("--shard", *shards, "OP=STRATEGY, e.g. dense1.matmul=((2,4),(4,1))");
  verb->add_flag("--alltoall", options->enableAllToAll, "let redistribution use all-to-all");
  auto searchName = std::make_shared<std::string>("semi_auto");
  verb->add_option("--search", *searchName,
                   "data_parallel | semi_auto | sharding_propagation | recursive_programming | ilp")
      ->capture_default_str();
  verb->add_flag("--ilp-tie-layers", options->ilpTieLayers,
                 "--search ilp: the layers of each stack share one decision (a smaller problem)");
  verb->add_option("--ilp-time", options->ilpTimeLimit,
                   "--search ilp: seconds CBC may take; past them the plan is the best found")
      ->check(finiteIn(1e-3, 604800))
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
  auto text = std::make_shared<TrainingFlagText>();
  addTrainingFlags(*verb, options->setup, options->training, *text);
  verb->add_flag("--sequence-parallel", degrees->sequenceParallel,
                 "with --tp: split norms, dropouts and residuals along the sequence (Megatron-LM)");
  verb->add_option("--framework", *frameworkName,
                   "price the plan with this framework's code path (docs/frameworks.md): " +
                       cost::frameworkNames() + "; default: the plan's features only");
  verb->add_option("--out", options->out, "write the plan JSON here");
  verb->add_option("--mindspore-strategy", options->mindsporeStrategyOut,
                   "also write the op strategies as the JSON MindSpore loads with "
                   "set_op_strategy_config(mode=\"LOAD\", path=...) (when the plan fits)");
  verb->add_option("--megatron-args", options->megatronArgsOut,
                   "also write Megatron-LM's arguments for the plan, one line (when it fits; an "
                   "op-level search's plan when its shardings are Megatron's)");
  verb->add_option("--strategy-file", options->strategyFile,
                   "read op strategies from such a MindSpore JSON as annotations (--shard of the "
                   "same op wins)");
  addMemoryPolicyOption(*verb, options->setup.memoryPolicy);
  verb->add_flag("--json", options->json, "print the plan JSON instead of the report");
  auto reportPath = std::make_shared<std::string>();
  addReportOption(*verb, *reportPath);
  verb->callback([&action, options, frameworkName, searchName, text, degrees, shards, reportPath,
                  verb] {
    for (const CLI::Option* option : verb->get_options()) {
      if (option->count() == 0 || option->get_lnames().empty()) continue;
      if (auto setting = ir::settingNamed(option->get_lnames().front())) {
        options->givenSettings.insert(*setting);
      }
    }
    action = [options, frameworkName, searchName, text, degrees, shards, reportPath] {
      if (auto status = applyDegreeFlags(*degrees, options->modelOptions); !status) {
        return reportError(status.error());
      }
      if (auto status = parseShards(*shards, *options); !status) {
        return reportError(status.error());
      }
      if (auto status = applyTrainingFlagText(*text, options->setup, options->training); !status) {
        return reportError(status.error());
      }
      auto mode = search::parseSearchMode(*searchName);
      if (!mode) return reportError(mode.error().in("--search"));
      options->search = *mode;
      if (!frameworkName->empty()) {
        auto framework = cost::parseFramework(*frameworkName);
        if (!framework) return reportError(framework.error());
        options->setup.framework = framework->framework;
        options->setup.frameworkRelease = framework->release;
        options->frameworkNamed = true;
      }
      return runPlan(*options, *reportPath);
    };
  });
}

}  // namespace autopar::cli
