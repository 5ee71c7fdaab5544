#include "planner/mem_coeff_auto.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "planner/inputs.h"
#include "util/in_parallel.h"

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

namespace {

/// Walks the ladder rung by rung and keeps the leanest plan seen, or the first that fits.
class Climb {
 public:
  Climb(const cluster::Cluster& cluster, const std::function<void(int)>& progress)
      : cluster_(cluster), progress_(progress) {}

  /// Takes rung `memCoeff`'s plan under `levers` (`set` of the climbs); true once one fits.
  bool take(size_t set, const Levers& levers, double memCoeff, PlanOptions& candidate,
            Evaluated& evaluated) {
    ++planned_;
    if (progress_) progress_(planned_);
    const int64_t peak = evaluated.peakBytes();
    const bool fits = peak <= cluster_.device.memoryBytes;
    if (set == 0 && (plainLeanest_ == 0 || peak < plainLeanest_)) plainLeanest_ = peak;
    if (!fits && leanest_ && leanest_->evaluated.peakBytes() <= peak) return false;
    const std::vector<std::string> leverFlags = levers.flags();
    std::vector<std::string> flags{"--mem-coeff", rungText(memCoeff)};
    flags.insert(flags.end(), leverFlags.begin(), leverFlags.end());
    std::string summary =
        fmt::format("mem_coeff auto: {}{} ({} plans): step {}, peak {} of {}", rungText(memCoeff),
                    leverFlags.empty() ? "" : fmt::format(" with {}", fmt::join(leverFlags, " ")),
                    planned_, formatSeconds(evaluated.estimate.stepSeconds), formatBytes(peak),
                    formatBytes(cluster_.device.memoryBytes));
    if (set > 0) {
      summary += fmt::format("; without a lever the least any mem_coeff needs is {}",
                             formatBytes(plainLeanest_));
    }
    leanest_ = MemCoeffChoice{std::move(candidate), std::move(evaluated), fits, std::move(flags),
                              std::move(summary)};
    return fits;
  }

  /// The choice: the first plan that fits, else the leanest, said so.
  MemCoeffChoice result(const std::vector<Levers>& sets) {
    if (leanest_->fits) return std::move(*leanest_);
    const std::vector<double> ladder = memCoeffLadder();
    leanest_->summary = fmt::format(
        "mem_coeff auto: no rung from {} to {} fits, with or without {}; the leanest is {}",
        rungText(ladder.front()), rungText(ladder.back()),
        sets.size() > 1 ? fmt::format("{}", fmt::join(sets.back().flags(), " "))
                        : std::string("a lever"),
        leanest_->summary.substr(leanest_->summary.find(':') + 2));
    return std::move(*leanest_);
  }

 private:
  const cluster::Cluster& cluster_;
  const std::function<void(int)>& progress_;
  int planned_ = 0;
  int64_t plainLeanest_ = 0;  ///< the least peak without a lever
  std::optional<MemCoeffChoice> leanest_;
};

}  // namespace

Expected<MemCoeffChoice> chooseMemCoeff(const PlanOptions& options, const cluster::Cluster& cluster,
                                        const std::function<void(int)>& progress) {
  if (options.search != "recursive_programming") {
    return Error{fmt::format(
        "--mem-coeff auto: only --search recursive_programming has a mem_coeff (the search is {})",
        options.search)};
  }
  Climb climb(cluster, progress);
  const std::vector<Levers> sets = leverSets(options);
  const std::vector<double> ladder = memCoeffLadder();
  for (size_t set = 0; set < sets.size(); ++set) {
    // A few rungs at once (util/in_parallel.h), taken in order as if planned one by one.
    for (size_t first = 0; first < ladder.size(); first += util::parallelWidth()) {
      std::vector<PlanOptions> batch;
      for (size_t rung = first; rung < std::min(ladder.size(), first + util::parallelWidth());
           ++rung) {
        batch.push_back(options);
        batch.back().memCoeff = ladder[rung];
        sets[set].apply(batch.back());
      }
      auto plans = util::inParallel(batch.size(), [&](size_t i) {
        return evaluate(batch[i], cluster, batch[i].modelOptions);
      });
      for (size_t i = 0; i < batch.size(); ++i) {
        if (!plans[i]) return plans[i].error();
        if (climb.take(set, sets[set], ladder[first + i], batch[i], *plans[i])) {
          return climb.result(sets);
        }
      }
    }
  }
  return climb.result(sets);
}

}  // namespace autopar::planner
