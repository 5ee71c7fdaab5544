#include "planner/mem_coeff_auto.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>

#include "planner/inputs.h"

namespace autopar::planner {

namespace {

/// Seed 000's starting mem_coeff, the factor between rungs, and the rungs.
constexpr double kFirstRung = 0.1;
constexpr double kRungFactor = 4;
constexpr int kRungs = 9;  // 0.1 .. 6553.6

/// The levers one climb of the ladder adds to the plan's own.
struct Levers {
  bool optimizerParallel = false;
  bool fullRecompute = false;
  /// The flags that turn them on, as the report prints them.
  [[nodiscard]] std::vector<std::string> flags() const {
    std::vector<std::string> flags;
    if (optimizerParallel) flags.push_back("--optimizer-parallel");
    if (fullRecompute) flags.insert(flags.end(), {"--recompute", "full"});
    return flags;
  }
  void apply(PlanOptions& options) const {
    if (optimizerParallel) options.training.optimizerParallel = true;
    if (fullRecompute) options.training.recompute = "full";
  }
};

/// No lever; then optimizer parallel; then also full recompute, each only where the plan does
/// not already have it.
std::vector<Levers> leverSets(const PlanOptions& options) {
  const bool optimizerParallel = !options.training.optimizerParallel;
  std::vector<Levers> sets{{}};
  if (optimizerParallel) sets.push_back({true, false});
  if (options.training.recompute == "none") sets.push_back({optimizerParallel, true});
  return sets;
}

std::string rungText(double memCoeff) { return fmt::format("{:g}", memCoeff); }

}  // namespace

std::vector<double> memCoeffLadder() {
  std::vector<double> ladder;
  double memCoeff = kFirstRung;
  for (int rung = 0; rung < kRungs; ++rung, memCoeff *= kRungFactor) ladder.push_back(memCoeff);
  return ladder;
}

Expected<MemCoeffChoice> chooseMemCoeff(const PlanOptions& options, const cluster::Cluster& cluster,
                                        const std::function<void(int)>& progress) {
  if (options.search != "recursive_programming") {
    return Error{fmt::format(
        "--mem-coeff auto: only --search recursive_programming has a mem_coeff (the search is {})",
        options.search)};
  }
  std::optional<MemCoeffChoice> leanest;
  int64_t plainLeanest = 0;  // the least peak without a lever
  int planned = 0;
  const std::vector<Levers> sets = leverSets(options);
  for (size_t set = 0; set < sets.size(); ++set) {
    const std::vector<std::string> leverFlags = sets[set].flags();
    for (double memCoeff : memCoeffLadder()) {
      PlanOptions candidate = options;
      candidate.memCoeff = memCoeff;
      sets[set].apply(candidate);
      auto evaluated = evaluate(candidate, cluster, candidate.modelOptions);
      if (!evaluated) return evaluated.error();
      ++planned;
      if (progress) progress(planned);
      const int64_t peak = evaluated->peakBytes();
      const bool fits = peak <= cluster.device.memoryBytes;
      if (set == 0 && (plainLeanest == 0 || peak < plainLeanest)) plainLeanest = peak;
      if (!fits && leanest && leanest->evaluated.peakBytes() <= peak) continue;
      std::vector<std::string> flags{"--mem-coeff", rungText(memCoeff)};
      flags.insert(flags.end(), leverFlags.begin(), leverFlags.end());
      const std::string levers =
          leverFlags.empty() ? "" : fmt::format(" with {}", fmt::join(leverFlags, " "));
      std::string summary =
          fmt::format("mem_coeff auto: {}{} ({} plans): step {}, peak {} of {}", rungText(memCoeff),
                      levers, planned, formatSeconds(evaluated->estimate.stepSeconds),
                      formatBytes(peak), formatBytes(cluster.device.memoryBytes));
      if (set > 0) {
        summary += fmt::format("; without a lever the least any mem_coeff needs is {}",
                               formatBytes(plainLeanest));
      }
      leanest = MemCoeffChoice{std::move(candidate), std::move(*evaluated), fits, std::move(flags),
                               std::move(summary)};
      if (fits) return std::move(*leanest);
    }
  }
  leanest->summary = fmt::format(
      "mem_coeff auto: no rung from {} to {} fits, with or without {}; "
      "the leanest is {}",
      rungText(memCoeffLadder().front()), rungText(memCoeffLadder().back()),
      sets.size() > 1 ? fmt::format("{}", fmt::join(sets.back().flags(), " "))
                      : std::string("a lever"),
      leanest->summary.substr(leanest->summary.find(':') + 2));
  return std::move(*leanest);
}

}  // namespace autopar::planner
