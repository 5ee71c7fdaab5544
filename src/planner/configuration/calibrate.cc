#include "planner/configuration/calibrate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "ir/setting.h"

namespace autopar::planner {

namespace {

/// Sweeps over the constants until none moves by more than kSettled of its value.
constexpr int kMaxSweeps = 6;
constexpr double kSettled = 1e-3;
/// Golden-section steps per constant: the bracket shrinks to 0.618^30 (5e-7) of its width.
constexpr int kGoldenSteps = 30;
/// A constant moves the runs it prices when a 20% change moves a prediction by more than this.
constexpr double kSensitive = 1e-4;

struct Prediction {
  double stepSeconds = 0;
  int64_t peakBytes = 0;
};

/// The fit's view of the runs: each run's measurements, and where its device reads the
/// constants (a cost::CostConstants::devices entry, or "" for the top level).
struct Problem {
  const std::vector<MeasuredRun>& runs;
  std::vector<const cost::ConstantField*> fields;
  std::set<std::string> entries;  ///< read by some run
  /// Predictions by configuration and the fitted constants' values: the fit prices each point
  /// once, however many runs repeat a configuration and however often the search returns to it.
  mutable std::map<std::pair<std::string, std::vector<double>>, Prediction> cache;
};

double valueOf(const cost::CostConstants& constants, const Problem& problem,
               const cost::ConstantField& field) {
  const std::string& entry = *problem.entries.begin();
  return entry.empty() ? constants.*field.field : constants.devices.at(entry).*field.field;
}

Expected<Prediction> predict(const Problem& problem, const MeasuredRun& run,
                             const cost::CostConstants& constants) {
  std::vector<double> values;
  for (const cost::ConstantField* field : problem.fields) {
    values.push_back(valueOf(constants, problem, *field));
  }
  auto key = std::make_pair(run.configuration, std::move(values));
  if (auto found = problem.cache.find(key); found != problem.cache.end()) return found->second;
  EstimateRequest request = run.request;
  request.config.costModel = std::make_shared<const cost::CostConstants>(constants);
  auto result = estimateWithPlacement(request);
  if (!result) return result.error().in(run.label + ": estimate");
  const Prediction prediction{result->estimate.stepSeconds, result->estimate.peakBytes()};
  problem.cache.emplace(std::move(key), prediction);
  return prediction;
}

/// The entry of `constants` a run on `device` is priced with.
std::string entryOf(const cost::CostConstants& constants, const std::string& device) {
  const cost::CostConstants& used = constants.forDevice(device);
  for (const auto& [name, entry] : constants.devices) {
    if (&entry == &used) return name;
  }
  return "";
}

void setValue(cost::CostConstants& constants, const Problem& problem,
              const cost::ConstantField& field, double value) {
  for (const std::string& entry : problem.entries) {
    (entry.empty() ? constants : constants.devices.at(entry)).*field.field = value;
  }
}

bool measures(const MeasuredRun& run, bool memory) {
  return memory ? run.peakBytes > 0 : run.stepSeconds > 0;
}

/// Mean absolute percentage error of the runs in `use` that measure what `memory` says.
Expected<double> errorOf(const Problem& problem, const std::vector<size_t>& use,
                         const cost::CostConstants& constants, bool memory) {
  double sum = 0;
  int count = 0;
  for (size_t i : use) {
    const MeasuredRun& run = problem.runs[i];
    if (!measures(run, memory)) continue;
    auto predicted = predict(problem, run, constants);
    if (!predicted) return predicted.error();
    const double measured = memory ? static_cast<double>(run.peakBytes) : run.stepSeconds;
    const double value =
        memory ? static_cast<double>(predicted->peakBytes) : predicted->stepSeconds;
    sum += std::abs(value - measured) / measured;
    ++count;
  }
  return count > 0 ? 100 * sum / count : 0;
}

/// The value of `field` in [lower, upper] with the least error, by golden-section search.
Expected<double> bestValue(const Problem& problem, const std::vector<size_t>& use,
                           cost::CostConstants constants, const cost::ConstantField& field,
                           double lower, double upper) {
  const auto error = [&](double value) -> Expected<double> {
    setValue(constants, problem, field, value);
    return errorOf(problem, use, constants, field.memory);
  };
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  double a = lower;
  double b = upper;
  double c = b - ratio * (b - a);
  double d = a + ratio * (b - a);
  auto errorC = error(c);
  if (!errorC) return errorC.error();
  auto errorD = error(d);
  if (!errorD) return errorD.error();
  for (int step = 0; step < kGoldenSteps; ++step) {
    if (*errorC <= *errorD) {
      b = d;
      d = c;
      errorD = errorC;
      c = b - ratio * (b - a);
      errorC = error(c);
      if (!errorC) return errorC.error();
    } else {
      a = c;
      c = d;
      errorC = errorD;
      d = a + ratio * (b - a);
      errorD = error(d);
      if (!errorD) return errorD.error();
    }
  }
  return (a + b) / 2;
}

/// `base` with the problem's constants fitted on the runs in `use`: each constant in turn moved
/// to its best value within a factor of four of its base value (and its file's bounds), while
/// that lowers the error, in sweeps until none moves.
Expected<cost::CostConstants> fit(const Problem& problem, const std::vector<size_t>& use,
                                  const cost::CostConstants& base) {
  cost::CostConstants start = base;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool moved = false;
    for (const cost::ConstantField* field : problem.fields) {
      const double current = valueOf(start, problem, *field);
      const double original = valueOf(base, problem, *field);
      auto best = bestValue(problem, use, start, *field, original / 4,
                            std::min(original * 4, field->upper));
      if (!best) return best.error();
      cost::CostConstants candidate = start;
      setValue(candidate, problem, *field, *best);
      auto before = errorOf(problem, use, start, field->memory);
      if (!before) return before.error();
      auto after = errorOf(problem, use, candidate, field->memory);
      if (!after) return after.error();
      if (*after >= *before) continue;
      moved = moved || std::abs(*best - current) > kSettled * current;
      start = std::move(candidate);
    }
    if (!moved) break;
  }
  return start;
}

/// Refuses constants the runs cannot determine: one no run's prediction depends on, or more
/// constants of a kind (time, memory) than distinct configurations measure it.
Status checkDetermined(const Problem& problem, const cost::CostConstants& base) {
  for (const bool memory : {false, true}) {
    std::set<std::string> configurations;
    std::vector<size_t> use;
    for (size_t i = 0; i < problem.runs.size(); ++i) {
      if (!measures(problem.runs[i], memory)) continue;
      configurations.insert(problem.runs[i].configuration);
      use.push_back(i);
    }
    std::vector<std::string> keys;
    for (const cost::ConstantField* field : problem.fields) {
      if (field->memory == memory) keys.emplace_back(field->key);
    }
    if (keys.empty()) continue;
    const char* measured = memory ? "peak memory" : "step time";
    if (use.empty()) {
      return Error{fmt::format("no run gives a {}, which {} prices", measured, keys.front())};
    }
    if (keys.size() > configurations.size()) {
      return Error{fmt::format(
          "{} runs of {} configuration(s) cannot determine {} constants of the {} ({}); fit at "
          "most {}, or add runs of other configurations",
          use.size(), configurations.size(), keys.size(), measured, fmt::join(keys, ", "),
          configurations.size())};
    }
    for (const cost::ConstantField* field : problem.fields) {
      if (field->memory != memory) continue;
      const double value = valueOf(base, problem, *field);
      cost::CostConstants lower = base;
      setValue(lower, problem, *field, value * 0.8);
      cost::CostConstants higher = base;
      setValue(higher, problem, *field, std::min(value * 1.25, field->upper));
      bool sensitive = false;
      for (size_t i : use) {
        auto low = predict(problem, problem.runs[i], lower);
        if (!low) return low.error();
        auto high = predict(problem, problem.runs[i], higher);
        if (!high) return high.error();
        const double a = memory ? static_cast<double>(low->peakBytes) : low->stepSeconds;
        const double b = memory ? static_cast<double>(high->peakBytes) : high->stepSeconds;
        if (std::abs(a - b) > kSensitive * std::max(std::abs(a), std::abs(b))) sensitive = true;
      }
      if (!sensitive) {
        return Error{
            fmt::format("no run's {} depends on {}; leave it out of --fit", measured, field->key)};
      }
    }
  }
  return {};
}

}  // namespace

Expected<Calibration> calibrate(const std::vector<MeasuredRun>& runs, const cost::CostModel& base,
                                const std::vector<std::string>& keys) {
  if (runs.empty()) return Error{"no runs to calibrate on"};
  Problem problem{runs, {}, {}, {}};
  for (const std::string& key : keys) {
    const auto fields = cost::constantFields();
    const auto found = std::find_if(fields.begin(), fields.end(),
                                    [&](const cost::ConstantField& f) { return key == f.key; });
    if (found == fields.end() || found->optional) {
      std::vector<std::string> names;
      for (const auto& field : fields) {
        if (!field.optional) names.emplace_back(field.key);
      }
      return Error{fmt::format("{}: expected constants of the cost model: {}",
                               ir::flag(ir::Setting::kFit, key), fmt::join(names, ", "))};
    }
    if (std::find(problem.fields.begin(), problem.fields.end(), &*found) == problem.fields.end()) {
      problem.fields.push_back(&*found);
    }
  }
  if (problem.fields.empty()) return Error{ir::flag(ir::Setting::kFit) + ": no constant to fit"};
  for (const MeasuredRun& run : runs) {
    auto cluster = clusterFor(run.request.config);
    if (!cluster) return cluster.error().in(run.label);
    problem.entries.insert(entryOf(*base, cluster->device.name));
  }
  if (auto status = checkDetermined(problem, *base); !status) return status.error();

  std::vector<size_t> all(runs.size());
  std::iota(all.begin(), all.end(), 0);
  auto fitted = fit(problem, all, *base);
  if (!fitted) return fitted.error();
  Calibration result;
  result.constants = *fitted;
  for (const cost::ConstantField* field : problem.fields) {
    result.fitted.push_back(
        {field->key, valueOf(*base, problem, *field), valueOf(*fitted, problem, *field)});
  }
  // Each run predicted before, after, and by the fit of the others.
  double before = 0;
  double after = 0;
  double leftOut = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<size_t> others;
    for (size_t j : all) {
      if (j != i) others.push_back(j);
    }
    std::optional<cost::CostConstants> withoutRun;
    if (!others.empty()) {
      auto refit = fit(problem, others, *base);
      if (!refit) return refit.error();
      withoutRun = std::move(*refit);
    }
    auto predictedBefore = predict(problem, runs[i], *base);
    if (!predictedBefore) return predictedBefore.error();
    auto predictedAfter = predict(problem, runs[i], *fitted);
    if (!predictedAfter) return predictedAfter.error();
    Expected<Prediction> predictedLeftOut = *predictedAfter;
    if (withoutRun) predictedLeftOut = predict(problem, runs[i], *withoutRun);
    if (!predictedLeftOut) return predictedLeftOut.error();
    for (const bool memory : {false, true}) {
      if (!measures(runs[i], memory)) continue;
      const auto pick = [memory](const Prediction& p) {
        return memory ? static_cast<double>(p.peakBytes) : p.stepSeconds;
      };
      CalibratedRun line{runs[i].label,
                         memory,
                         memory ? static_cast<double>(runs[i].peakBytes) : runs[i].stepSeconds,
                         pick(*predictedBefore),
                         pick(*predictedAfter),
                         pick(*predictedLeftOut)};
      before += std::abs(line.before - line.measured) / line.measured;
      after += std::abs(line.after - line.measured) / line.measured;
      leftOut += std::abs(line.leftOut - line.measured) / line.measured;
      result.runs.push_back(std::move(line));
    }
  }
  const auto count = static_cast<double>(result.runs.size());
  result.errorBefore = 100 * before / count;
  result.errorAfter = 100 * after / count;
  result.leaveOneOutError = runs.size() > 1 ? 100 * leftOut / count : 0;
  return result;
}

}  // namespace autopar::planner
