#include "planner/mem_coeff_auto.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "planner/inputs.h"
#include "util/in_parallel.h"

namespace autopar::planner {

namespace {

/// Seed 000's starting mem_coeff, the factor between rungs, and the rungs.
constexpr double kFirstRung = 0.1;
constexpr double kRungFactor = 4;
constexpr int kRungs = 9;  // 0.1 .. 6553.6
/// `fastest` plans just above each change point (walkChangePoints): this far above, relatively,
/// then rounded up. And the most plans one climb makes.
constexpr double kChangePointMargin = 1e-6;
constexpr int kMostPlans = 48;

/// The levers one climb of the ladder adds to the plan's own.
struct Levers {
  bool optimizerParallel = false;
  bool fullRecompute = false;
  bool commRecompute = false;  ///< optimizer-parallel gathers recomputed in recomputed blocks
  /// The flags that turn them on, as the report prints them.
  [[nodiscard]] std::vector<std::string> flags() const {
    std::vector<std::string> flags;
    if (optimizerParallel) flags.push_back(ir::flag(Setting::kOptimizerParallel));
    if (fullRecompute) flags.insert(flags.end(), {ir::flag(Setting::kRecompute), "full"});
    if (commRecompute) flags.push_back(ir::flag(Setting::kParallelOptimizerCommRecompute));
    return flags;
  }
  void apply(PlanOptions& options) const {
    if (optimizerParallel) options.training.optimizerParallel = true;
    if (fullRecompute) options.setup.recompute = ir::Recompute::kFull;
    if (commRecompute) options.training.parallelOptimizerCommRecompute = true;
  }
};

/// No lever; then optimizer parallel; then also full recompute; then also the gathers
/// recomputed, so that recomputed blocks stop holding every gathered parameter; each only where
/// the plan does not already have it.
std::vector<Levers> leverSets(const PlanOptions& options) {
  const bool optimizerParallel = !options.training.optimizerParallel;
  const bool fullRecompute = options.setup.recompute == ir::Recompute::kNone;
  std::vector<Levers> sets{{}};
  if (optimizerParallel) sets.push_back({true, false, false});
  if (fullRecompute) sets.push_back({optimizerParallel, true, false});
  if (options.setup.recompute != ir::Recompute::kSelective &&
      !options.training.parallelOptimizerCommRecompute) {
    sets.push_back({optimizerParallel, fullRecompute, true});
  }
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

/// Walks the ladder rung by rung. Under `auto` the first plan that fits is the choice; under
/// `fastest`, the fastest of the plans that fit in the first climb that has one (the smaller rung
/// on a tie). Until a plan fits it keeps the leanest.
class Climb {
 public:
  Climb(frontend::MemCoeffRule rule, const cluster::Cluster& cluster,
        const std::function<void(int)>& progress)
      : rule_(rule), cluster_(cluster), progress_(progress) {}

  /// Takes rung `memCoeff`'s plan under `levers`, in climb `set`.
  void take(size_t set, const Levers& levers, double memCoeff, PlanOptions& candidate,
            Evaluated& evaluated) {
    ++planned_;
    if (progress_) progress_(planned_);
    const int64_t peak = evaluated.peakBytes();
    const bool fits = evaluated.fitsIn(cluster_.device.memoryBytes, candidate.setup.memoryPolicy);
    if (set == 0 && (plainLeanest_ == 0 || peak < plainLeanest_)) plainLeanest_ = peak;
    const double step = evaluated.estimate.stepSeconds;
    if (fits && (!smallest_ || memCoeff < smallest_->memCoeff)) smallest_ = Rung{memCoeff, step};
    std::optional<Taken>& slot = fits ? fitting_ : leanest_;
    const bool better = !slot || (fits ? rule_ == frontend::MemCoeffRule::kFastest &&
                                             step < slot->evaluated.estimate.stepSeconds
                                       : peak < slot->evaluated.peakBytes());
    if (!better) return;
    slot = Taken{set, levers, memCoeff, std::move(candidate), std::move(evaluated)};
  }

  /// Whether the choice is made: a plan fits, and under `fastest` the climb is over.
  [[nodiscard]] bool decided(bool climbOver) const {
    return fitting_ && (rule_ == frontend::MemCoeffRule::kAuto || climbOver);
  }

  /// The choice, or the leanest plan, said so.
  MemCoeffChoice result(const std::vector<Levers>& sets) {
    Taken& taken = fitting_ ? *fitting_ : *leanest_;
    const std::vector<std::string> leverFlags = taken.levers.flags();
    std::vector<std::string> flags{ir::flag(Setting::kMemCoeff), rungText(taken.memCoeff)};
    flags.insert(flags.end(), leverFlags.begin(), leverFlags.end());
    const int64_t peak = taken.evaluated.peakBytes();
    std::string line =
        fmt::format("{}{} ({} plans): step {}, peak {} of {}", rungText(taken.memCoeff),
                    leverFlags.empty() ? "" : fmt::format(" with {}", fmt::join(leverFlags, " ")),
                    planned_, formatSeconds(taken.evaluated.estimate.stepSeconds),
                    formatBytes(peak), formatBytes(cluster_.device.memoryBytes));
    if (fitting_ && rule_ == frontend::MemCoeffRule::kFastest &&
        smallest_->memCoeff != taken.memCoeff) {
      line += fmt::format("; the smallest that fits, {}, takes {}", rungText(smallest_->memCoeff),
                          formatSeconds(smallest_->stepSeconds));
    }
    if (taken.set > 0) {
      line += fmt::format("; without a lever the least any mem_coeff needs is {}",
                          formatBytes(plainLeanest_));
    }
    const std::string_view rule = frontend::memCoeffRuleName(rule_);
    std::string summary = fmt::format("mem_coeff {}: {}", rule, line);
    if (!fitting_) {
      const std::vector<double> ladder = memCoeffLadder();
      summary = fmt::format(
          "mem_coeff {}: no rung from {} to {} fits, with or without {}; the leanest is {}", rule,
          rungText(ladder.front()), rungText(ladder.back()),
          sets.size() > 1 ? fmt::format("{}", fmt::join(sets.back().flags(), " "))
                          : std::string("a lever"),
          line);
    }
    return MemCoeffChoice{std::move(taken.options), std::move(taken.evaluated),
                          fitting_.has_value(), std::move(flags), std::move(summary)};
  }

 private:
  struct Rung {
    double memCoeff = 0;
    double stepSeconds = 0;
  };
  struct Taken {
    size_t set = 0;
    Levers levers;
    double memCoeff = 0;
    PlanOptions options;
    Evaluated evaluated;
  };

  frontend::MemCoeffRule rule_;
  const cluster::Cluster& cluster_;
  const std::function<void(int)>& progress_;
  int planned_ = 0;
  int64_t plainLeanest_ = 0;      ///< the least peak without a lever
  std::optional<Rung> smallest_;  ///< the least mem_coeff planned that fits
  std::optional<Taken> fitting_;  ///< the choice among the plans that fit
  std::optional<Taken> leanest_;  ///< the leanest of those that do not
};

/// The least value above `point` with three significant digits: printed with {:g}, it reads
/// back as itself, so the mem_coeff a report names makes the plan it names.
double justAbove(double point) {
  const double above = point * (1 + kChangePointMargin);
  const int digits = 2 - static_cast<int>(std::floor(std::log10(above)));
  const double scale = std::pow(10.0, std::abs(digits));
  return digits >= 0 ? std::ceil(above * scale) / scale : std::ceil(above / scale) * scale;
}

/// A ladder rung planned in this climb, and where its plan first changes.
struct RungPlan {
  double memCoeff = 0;
  double next = 0;  ///< search::SearchOutcome::nextMemCoeff
};

/// `fastest`'s walk, in the climb whose ladder has a plan that fits: every plan the search makes
/// from the ladder's first rung up, at most kMostPlans. The search's choices change only where
/// one choice's cost overtakes another's as mem_coeff grows, and each plan says where its first
/// change is (search::RecursiveResult::nextMemCoeff); the next plan is made just above it. A
/// point below a rung's first change and not below the rung makes the rung's plan, which the
/// ladder already took: the walk goes on from that change instead.
Status walkChangePoints(const PlanOptions& options, const Levers& levers, size_t set,
                        const std::vector<RungPlan>& rungs, const cluster::Cluster& cluster,
                        Climb& climb) {
  const std::vector<double> ladder = memCoeffLadder();
  double memCoeff = ladder.front();
  for (int planned = 0; planned < kMostPlans && memCoeff <= ladder.back();) {
    auto known = std::find_if(rungs.begin(), rungs.end(), [&](const RungPlan& rung) {
      return rung.memCoeff <= memCoeff && memCoeff < rung.next;
    });
    double next = 0;
    if (known != rungs.end()) {
      next = known->next;
    } else {
      PlanOptions candidate = options;
      candidate.memCoeff = memCoeff;
      levers.apply(candidate);
      auto plan = evaluate(candidate, cluster, candidate.modelOptions);
      if (!plan) return plan.error();
      next = plan->outcome.nextMemCoeff;
      climb.take(set, levers, memCoeff, candidate, *plan);
      ++planned;
    }
    if (!std::isfinite(next)) break;
    memCoeff = justAbove(next);
  }
  return {};
}

}  // namespace

Expected<MemCoeffChoice> chooseMemCoeff(const PlanOptions& options, const cluster::Cluster& cluster,
                                        const std::function<void(int)>& progress,
                                        FastestClimb walk) {
  const frontend::MemCoeffRule rule = options.memCoeffRule == frontend::MemCoeffRule::kFastest
                                          ? frontend::MemCoeffRule::kFastest
                                          : frontend::MemCoeffRule::kAuto;
  if (options.search != search::SearchMode::kRecursiveProgramming) {
    return Error{fmt::format("{}: only {} recursive_programming has a mem_coeff (the search is {})",
                             ir::flag(Setting::kMemCoeff, frontend::memCoeffRuleName(rule)),
                             ir::flag(Setting::kSearch), search::searchModeName(options.search))};
  }
  Climb climb(rule, cluster, progress);
  const std::vector<Levers> sets = leverSets(options);
  const std::vector<double> ladder = memCoeffLadder();
  for (size_t set = 0; set < sets.size(); ++set) {
    std::vector<RungPlan> rungs;
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
        rungs.push_back({ladder[first + i], plans[i]->outcome.nextMemCoeff});
        climb.take(set, sets[set], ladder[first + i], batch[i], *plans[i]);
        if (climb.decided(false)) return climb.result(sets);
      }
    }
    if (climb.decided(true) && walk == FastestClimb::kEveryPlan) {
      if (auto status = walkChangePoints(options, sets[set], set, rungs, cluster, climb); !status) {
        return status.error();
      }
    }
    if (climb.decided(true)) return climb.result(sets);
  }
  return climb.result(sets);
}

}  // namespace autopar::planner
