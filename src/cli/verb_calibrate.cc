/// `autopar calibrate RUNS.jsonl`: the cost model's constants re-fitted on a user's own measured
/// runs (planner/configuration/calibrate.h), written as a cost-model file that --cost-model takes.
///
/// RUNS.jsonl holds one run per line, blank lines skipped:
///   {"estimate": "--model llama2-7b --cluster dgx-h100 --tp 2 --dp 4 --gbs 64",
///    "step_time_s": 1.42, "peak_memory_gib": 61.3}
/// "estimate" is the configuration as `autopar estimate` takes it (a string split at spaces, or a
/// list of arguments); "step_time_s" the measured seconds of one training step, and
/// "peak_memory_gib" the device memory the process held at its peak (nvidia-smi's figure, or
/// torch.cuda.max_memory_reserved() plus the CUDA context); at least one of them. Or "log": the
/// run's own log lines (a string or a list; frontend/training_log.h), Megatron-LM's iteration and
/// memory lines or torchtitan's metrics line, whose step time, peak and tokens per second per
/// device (a step is then the step's tokens per device over it) stand in for the figures a run
/// does not give itself.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/verbs.h"
#include "cost/constants.h"
#include "frontend/training_log.h"
#include "planner/configuration/calibrate.h"
#include "planner/inputs.h"
#include "util/atomic_file.h"
#include "util/text_file.h"

namespace autopar::cli {

namespace {

constexpr size_t kMaxRuns = 10'000;
constexpr double kMaxStepSeconds = 1e6;
constexpr double kMaxPeakGib = 1e5;
constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

struct CalibrateArgs {
  std::string runs;
  std::vector<std::string> fit;  ///< empty: the defaults
  std::string costModel;         ///< empty: the shipped constants
  std::string out = "calibrated_cost_model.json";
};

/// How a field given as one string is cut.
enum class Cut { kWords, kLines };

/// A run's field given as one string (cut into words or lines) or as a list of strings; the
/// errors are `notStrings` for a list with another item and `notText` for anything else.
Expected<std::vector<std::string>> stringsOf(const nlohmann::json& value, Cut cut,
                                             const char* notStrings, const char* notText) {
  std::vector<std::string> strings;
  if (value.is_string()) {
    std::istringstream text(value.get<std::string>());
    if (cut == Cut::kWords) {
      for (std::string word; text >> word;) strings.push_back(word);
    } else {
      for (std::string line; std::getline(text, line);) strings.push_back(line);
    }
  } else if (value.is_array()) {
    for (const auto& item : value) {
      if (!item.is_string()) return Error{notStrings};
      strings.push_back(item.get<std::string>());
    }
  } else {
    return Error{notText};
  }
  return strings;
}

/// A run's "estimate": a string split at spaces, or a list of strings.
Expected<std::vector<std::string>> argumentsOf(const nlohmann::json& value) {
  auto arguments =
      stringsOf(value, Cut::kWords, "estimate: expected a list of strings",
                "estimate: expected the arguments of `autopar estimate`, a string or a list");
  if (!arguments) return arguments.error();
  if (std::find(arguments->begin(), arguments->end(), "--cost-model") != arguments->end()) {
    return Error{"estimate: --cost-model is calibrate's (the constants the fit starts from)"};
  }
  return arguments;
}

/// A measured figure: a number in (0, upper].
Expected<double> measuredOf(const nlohmann::json& run, const char* key, double upper) {
  if (!run.contains(key)) return 0.0;
  const auto& value = run.at(key);
  if (!value.is_number() || !(value.get<double>() > 0) || value.get<double>() > upper) {
    return Error{
        fmt::format("{}: expected a number in (0, {:g}], got {}", key, upper, value.dump())};
  }
  return value.get<double>();
}

/// A run's "log": its lines, as one string (split at line ends) or a list of strings.
Expected<frontend::TrainingLogFigures> logFiguresOf(const nlohmann::json& value) {
  auto lines = stringsOf(value, Cut::kLines, "expected a list of strings (log lines)",
                         "expected the run's log lines, a string or a list of strings");
  if (!lines) return lines.error();
  return frontend::readTrainingLog(*lines);
}

/// Tokens one device trains in a step: the global batch's tokens over the devices (torchtitan's
/// tps is per device).
Expected<double> tokensPerDevice(const planner::MegatronConfig& config) {
  int64_t seq = config.seq;
  if (seq <= 0) {
    auto transformer = planner::transformerOf(config);
    if (!transformer) return transformer.error();
    seq = transformer->seq;
  }
  if (config.worldSize() <= 0 || config.gbs <= 0) {
    return Error{"a torchtitan log's tps needs --gbs and the degrees"};
  }
  return static_cast<double>(config.gbs * seq) / static_cast<double>(config.worldSize());
}

Expected<planner::MeasuredRun> runOf(const std::string& line, const std::string& label) {
  const auto run = nlohmann::json::parse(line, nullptr, false);
  if (run.is_discarded() || !run.is_object()) {
    return Error{fmt::format("{}: expected a JSON object", label)};
  }
  for (const auto& [key, value] : run.items()) {
    if (key != "estimate" && key != "step_time_s" && key != "peak_memory_gib" && key != "log") {
      return Error{fmt::format(
          "{}: {}: unknown key; expected estimate, step_time_s, peak_memory_gib and log", label,
          key)};
    }
  }
  if (!run.contains("estimate")) return Error{fmt::format("{}: estimate: missing", label)};
  auto arguments = argumentsOf(run.at("estimate"));
  if (!arguments) return arguments.error().in(label);
  auto step = measuredOf(run, "step_time_s", kMaxStepSeconds);
  if (!step) return step.error().in(label);
  auto peak = measuredOf(run, "peak_memory_gib", kMaxPeakGib);
  if (!peak) return peak.error().in(label);
  auto request = estimateRequestOf(*arguments);
  if (!request) return request.error().in(label + ": estimate");
  if (run.contains("log")) {
    auto figures = logFiguresOf(run.at("log"));
    if (!figures) return figures.error().in(label + ": log");
    if (*peak == 0) *peak = figures->peakGib;
    if (*step == 0) *step = figures->stepSeconds;
    if (*step == 0 && figures->tokensPerSecondPerDevice > 0) {
      auto tokens = tokensPerDevice(request->config);
      if (!tokens) return tokens.error().in(label + ": estimate");
      *step = *tokens / figures->tokensPerSecondPerDevice;
    }
  }
  if (*step == 0 && *peak == 0) {
    return Error{
        fmt::format("{}: expected step_time_s, peak_memory_gib, a log with them, or both", label)};
  }
  std::string configuration;
  for (const std::string& argument : *arguments) configuration += argument + " ";
  return planner::MeasuredRun{label, configuration, std::move(*request), *step,
                              static_cast<int64_t>(std::llround(*peak * kGib))};
}

Expected<std::vector<planner::MeasuredRun>> readRuns(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return text.error();
  std::vector<planner::MeasuredRun> runs;
  std::istringstream lines(*text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (runs.size() == kMaxRuns) {
      return Error{fmt::format("{}: more than {} runs", path, kMaxRuns)};
    }
    auto run = runOf(line, fmt::format("{}:{}", path, number));
    if (!run) return run.error();
    runs.push_back(std::move(*run));
  }
  if (runs.empty()) return Error{fmt::format("{}: no runs", path)};
  return runs;
}

std::string figure(double value, bool memory) {
  return memory ? planner::formatBytes(static_cast<int64_t>(value)) : planner::formatSeconds(value);
}

void printCalibration(const planner::Calibration& calibration, const CalibrateArgs& args,
                      size_t runs) {
  const auto peaks = static_cast<size_t>(
      std::count_if(calibration.runs.begin(), calibration.runs.end(),
                    [](const planner::CalibratedRun& run) { return run.memory; }));
  fmt::print(verbOut(), "calibrated on {} runs ({} step times, {} peaks), from {}\n", runs,
             calibration.runs.size() - peaks, peaks,
             args.costModel.empty() ? "the shipped cost model" : args.costModel);
  for (const planner::CalibratedConstant& constant : calibration.fitted) {
    fmt::print(verbOut(), "  {:<28} {:.6g} -> {:.6g}\n", constant.key, constant.before,
               constant.after);
  }
  fmt::print(verbOut(), "\n{:<32} {:>12} {:>12} {:>12} {:>12}\n", "run", "measured", "before",
             "after", "left out");
  for (const planner::CalibratedRun& run : calibration.runs) {
    fmt::print(verbOut(), "{:<32} {:>12} {:>12} {:>12} {:>12}\n",
               fmt::format("{} {}", run.label, run.memory ? "peak" : "step"),
               figure(run.measured, run.memory), figure(run.before, run.memory),
               figure(run.after, run.memory), figure(run.leftOut, run.memory));
  }
  fmt::print(verbOut(), "\nmean absolute error {:.1f}% -> {:.1f}%", calibration.errorBefore,
             calibration.errorAfter);
  if (runs > 1) fmt::print(verbOut(), "; leave-one-out {:.1f}%", calibration.leaveOneOutError);
  fmt::print(verbOut(), "\nwrote {}: use it with --cost-model {}\n", args.out, args.out);
}

int runCalibrate(const CalibrateArgs& args) {
  auto runs = readRuns(args.runs);
  if (!runs) return reportError(runs.error());
  cost::CostModel base = cost::shippedCostModel();
  if (!args.costModel.empty()) {
    auto read = cost::readCostModelFile(args.costModel);
    if (!read) return reportError(read.error().in("--cost-model"));
    base = *read;
  }
  std::vector<std::string> keys = args.fit;
  if (keys.empty()) {
    // The constant each kind of measurement moves most: the GEMMs' efficiency for step times,
    // the caching allocator's reserve for peaks.
    const auto any = [&](auto measured) {
      return std::any_of(runs->begin(), runs->end(), measured);
    };
    if (any([](const planner::MeasuredRun& run) { return run.stepSeconds > 0; })) {
      keys.emplace_back("matmul_efficiency");
    }
    if (any([](const planner::MeasuredRun& run) { return run.peakBytes > 0; })) {
      keys.emplace_back("allocator_reserve");
    }
  }
  auto calibration = planner::calibrate(*runs, base, keys);
  if (!calibration) {
    // A run's error names its line, a --fit error the flag; the others are the file's.
    const Error& error = calibration.error();
    const bool named =
        error.message.starts_with(args.runs + ":") || error.message.starts_with("--");
    return reportError(named ? error : error.in(args.runs));
  }
  const std::string about = fmt::format(
      "autopar calibrate {}: {} fitted on {} runs (mean absolute error {:.1f}% -> {:.1f}%)",
      args.runs, fmt::join(keys, ", "), runs->size(), calibration->errorBefore,
      calibration->errorAfter);
  if (auto written =
          writeFileAtomically(args.out, cost::costConstantsToJson(calibration->constants, about));
      !written) {
    return reportError(written.error().in("--out"));
  }
  printCalibration(*calibration, args, runs->size());
  return kExitOk;
}

}  // namespace

void addCalibrateVerb(CLI::App& app, Action& action) {
  CLI::App* verb = app.add_subcommand(
      "calibrate",
      "Re-fit the cost model's constants on your own measured runs (a JSONL of `autopar "
      "estimate` arguments with step_time_s and/or peak_memory_gib) and write a cost-model file "
      "for --cost-model");
  auto args = std::make_shared<CalibrateArgs>();
  verb->add_option("runs", args->runs, "the measured runs, one JSON object per line")->required();
  verb->add_option("--fit", args->fit,
                   "constants to fit, e.g. matmul_efficiency,attention_efficiency (default: "
                   "matmul_efficiency on step times, allocator_reserve on peaks)")
      ->delimiter(',');
  verb->add_option("--cost-model", args->costModel,
                   "the constants the fit starts from (default: the shipped ones)");
  verb->add_option("--out", args->out, "where to write the fitted cost model")
      ->capture_default_str();
  verb->callback([&action, args] { action = [args] { return runCalibrate(*args); }; });
}

}  // namespace autopar::cli
