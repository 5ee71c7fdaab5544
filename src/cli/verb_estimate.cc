/// `autopar estimate`: one Megatron-style configuration's step time, throughput, FLOPs and memory
/// per pipeline stage, without a search (planner/configuration/configuration_estimate.h).

#include <fmt/format.h>

#include "cli/configuration_options.h"
#include "cli/html_report_file.h"
#include "cli/verbs.h"
#include "export/estimate_json.h"
#include "export/estimate_report.h"
#include "export/html_report_content.h"
#include "planner/configuration/configuration_estimate.h"
#include "planner/configuration/estimate_advice.h"
#include "planner/configuration/estimate_request.h"

namespace autopar::cli {

namespace {

struct EstimateArgs {
  planner::MegatronConfig config;
  ConfigurationFlags flags;
  bool json = false;
  bool closedForm = false;
  bool place = false;
  bool zeroBubble = false;         ///< --zero-bubble
  std::string recompute = "none";  ///< --recompute
  planner::GivenPlacement given;   ///< --llm-layers, --vit-layers, --llm-recompute, --vit-recompute
  std::string profile;             ///< a measured block table for --closed-form and --place
  std::string reportPath;          ///< --report
};

/// Prints the estimate (JSON or the report) with the placement and the closed form when given;
/// exit 3 when the configuration does not fit.
int report(const EstimateArgs& args, const planner::MegatronConfig& config,
           const planner::ConfigEstimate& estimate,
           const std::optional<search::Placement>& placement,
           const std::optional<search::AnalyticEstimate>& screen) {
  const search::Placement* placed = placement ? &*placement : nullptr;
  const search::AnalyticEstimate* closed = screen ? &*screen : nullptr;
  if (!args.reportPath.empty()) {
    if (auto written =
            writeHtmlReport(args.reportPath, exporters::estimateHtmlReport(config, estimate));
        !written) {
      return reportError(written.error());
    }
  }
  std::optional<planner::OverflowAdvice> advice;
  if (!estimate.fits()) advice = planner::overflowAdvice(estimate, config);
  if (args.json) {
    const auto* fixes = advice ? &advice->fixes : nullptr;
    fmt::print(verbOut(), "{}\n",
               exporters::estimateJson(config, estimate, placed, closed, fixes).dump(2));
  } else {
    fmt::print(verbOut(), "{}", exporters::formatEstimateReport(config, estimate, placed, closed));
  }
  if (!advice) return kExitOk;
  return reportDoesNotFit(advice->message);
}

/// The request the parsed flags make.
Expected<planner::EstimateRequest> requestOf(const EstimateArgs& args) {
  planner::MegatronConfig config = args.config;
  if (auto status = applyConfigurationFlags(args.flags, config); !status) return status.error();
  auto recompute = ir::parseRecompute(args.recompute);
  if (!recompute) {
    return Error{fmt::format("--recompute '{}': expected none, selective or full", args.recompute)};
  }
  config.recompute = *recompute;
  if (args.zeroBubble && (config.pp < 2 || config.vpp > 1)) {
    return Error{"--zero-bubble: needs --pp greater than 1 and --vpp 1"};
  }
  config.schedule = config.vpp > 1    ? ir::Schedule::kInterleaved
                    : args.zeroBubble ? ir::Schedule::kZeroBubbleH1
                                      : ir::Schedule::k1F1B;
  return planner::EstimateRequest{config, args.given, args.place, args.closedForm, args.profile};
}

int runEstimate(const EstimateArgs& args) {
  auto request = requestOf(args);
  if (!request) return reportError(request.error());
  auto result = planner::estimateWithPlacement(*request);
  if (!result) return reportError(result.error());
  return report(args, result->config, result->estimate, result->placement, result->screen);
}

/// The options of `autopar estimate` on `verb`, parsed into `args`.
void addEstimateOptions(CLI::App* verb, EstimateArgs* args) {
  planner::MegatronConfig* config = &args->config;
  config->allowIdle = false;
  addConfigurationOptions(*verb, *config, args->flags);
  verb->add_option("--tp", config->tp, "tensor-parallel degree")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--pp", config->pp, "pipeline stages")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--dp", config->dp, "data-parallel degree")
      ->required()
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--cp", config->cp, "context-parallel degree")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--ep", config->ep,
                   "expert-parallel degree of a mixture-of-experts model, out of --dp (divides "
                   "--dp and the experts)")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--vpp", config->vpp, "virtual stages per pipeline stage (interleaved)")
      ->check(positiveAtMost(limits::kMaxLayers));
  verb->add_flag("--zero-bubble", args->zeroBubble,
                 "the zero-bubble H1 pipeline schedule (weight gradients fill the bubbles)");
  verb->add_option("--mbs", config->mbs, "micro-batch size per data-parallel replica")
      ->check(positiveAtMost(limits::kMaxMicroBatch));
  verb->add_flag("--sequence-parallel", config->sequenceParallel, "Megatron-LM sequence parallel");
  verb->add_option("--recompute", args->recompute, "none | selective | full")
      ->capture_default_str();
  verb->add_option("--zero", config->zero, "0 | 1 | 2 | 3 (distributed optimizer)")
      ->capture_default_str();
  verb->add_flag("--json", args->json, "print JSON");
  addReportOption(*verb, args->reportPath);
  verb->add_flag("--allow-idle", config->allowIdle,
                 "plan on the devices the configuration uses when --nodes holds more");
  verb->add_flag("--closed-form", args->closedForm,
                 "also give the search's closed-form estimate (its screen) of this configuration");
  verb->add_flag("--place", args->place,
                 "place the layers on the stages exactly, with per-stage recompute (the search's "
                 "inner solver), and estimate the placed configuration");
  verb->add_option("--profile", args->profile,
                   "measured block table (docs/profile-table.md) for --closed-form and --place");
  verb->add_option(
          "--llm-layers", args->given.llmLayers,
          "LLM layers per pipeline stage, per virtual stage with --vpp (chunk c of stage s "
          "at c PP + s; seed 003's llm_layer_placement)")
      ->delimiter(',');
  verb->add_option("--vit-layers", args->given.vitLayers,
                   "vision-tower layers per pipeline stage (vit_layer_placement)")
      ->delimiter(',');
  verb->add_option("--llm-recompute", args->given.llmRecompute,
                   "LLM layers recomputed in full per stage (llm_layer_recompute)")
      ->delimiter(',');
  verb->add_option("--vit-recompute", args->given.vitRecompute,
                   "vision-tower layers recomputed in full per stage (vit_layer_recompute)")
      ->delimiter(',');
}

}  // namespace

void addEstimateVerb(CLI::App& app, Action& action) {
  CLI::App* verb = app.add_subcommand(
      "estimate",
      "Estimate one Megatron-style configuration without searching: step time, tokens/s, model "
      "TFLOP/s per GPU, MFU and memory per pipeline stage");
  auto args = std::make_shared<EstimateArgs>();
  addEstimateOptions(verb, args.get());
  verb->callback([&action, args] { action = [args] { return runEstimate(*args); }; });
}

Expected<planner::EstimateRequest> estimateRequestOf(const std::vector<std::string>& arguments) {
  CLI::App app{"estimate"};
  EstimateArgs args;
  addEstimateOptions(&app, &args);
  std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());  // CLI11's order
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& error) {
    return Error{error.what()};
  }
  return requestOf(args);
}

}  // namespace autopar::cli
