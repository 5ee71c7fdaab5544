#include "search/intra_op/intra_op_lagrangian.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "search/intra_op/message_passing.h"

namespace autopar::search::local {

namespace {

/// Sweeps of message passing per round of dual ascent.
constexpr int kSweeps = 5;
/// Rounds without a better bound before the step shrinks.
constexpr int kPatience = 3;
/// A primal drive every this many rounds, from this round on (the first rounds' prices are far
/// from the dual optimum).
constexpr int64_t kDriveEvery = 4;
constexpr int64_t kFirstDrive = 8;
/// A drive's round limit.
constexpr int kDriveRounds = 30;
/// Hard-search moves that polish a drive's labelling.
constexpr int64_t kPolishMoves = 1000;

/// Per node, the sum of the multipliers over its live segments.
std::vector<double> nodePrices(const Indexed& index, const std::vector<double>& multipliers) {
  std::vector<double> prefix(multipliers.size() + 1, 0.0);
  std::partial_sum(multipliers.begin(), multipliers.end(), prefix.begin() + 1);
  std::vector<double> prices(index.segments.size());
  for (size_t v = 0; v < prices.size(); ++v) {
    const auto [lo, hi] = index.segments[v];
    prices[v] = lo < hi ? prefix[hi] - prefix[lo] : 0.0;
  }
  return prices;
}

/// The usage of `labels` per segment, into `usage`; returns its peak.
int64_t usageProfile(const Indexed& index, const std::vector<int>& labels,
                     std::vector<int64_t>& usage) {
  std::vector<int64_t> change(index.timeline + 1, 0);
  for (size_t v = 0; v < labels.size(); ++v) {
    const auto [lo, hi] = index.segments[v];
    if (lo >= hi) continue;
    const int64_t used = index.problem.nodes[v].usages[static_cast<size_t>(labels[v])];
    change[lo] += used;
    change[hi] -= used;
  }
  usage.resize(index.timeline);
  int64_t live = 0;
  int64_t peak = 0;
  for (size_t t = 0; t < index.timeline; ++t) {
    live += change[t];
    usage[t] = live;
    peak = std::max(peak, live);
  }
  return peak;
}

class LagrangianSearch {
 public:
  LagrangianSearch(const Indexed& index, uint64_t seed, Budget& budget, double driveGrowth)
      : index_(index),
        seed_(seed),
        budget_(budget),
        driveGrowth_(driveGrowth),
        passing_(index.problem),
        multipliers_(index.timeline, 0.0) {}

  Outcome run() {
    Search start(index_, seed_);
    if (!start.start()) return {};
    start.descend(everyNode());
    keep(start);
    for (int64_t round = 0; !budget_.spent() && !proven(); ++round) {
      const double dual = solveDual();
      const std::vector<int> labels = passing_.labels();
      if (round >= kFirstDrive && round % kDriveEvery == 0) drive(round);
      step(dual, labels);
    }
    best_.lowerBound = bestBound_;
    return best_;
  }

 private:
  [[nodiscard]] std::vector<int> everyNode() const {
    std::vector<int> all(index_.problem.nodes.size());
    std::iota(all.begin(), all.end(), 0);
    return all;
  }

  /// The best solution is optimal: costs are integers, so the optimum is at least the bound
  /// rounded up (the half taken off covers the bound's rounding error).
  [[nodiscard]] bool proven() const {
    return best_.feasible && std::ceil(bestBound_ - 0.5) >= static_cast<double>(best_.cost);
  }

  /// Takes the search's solution as the best when it is cheaper; true when it did.
  bool keep(const Search& search) {
    if (search.cost() >= kNever || search.cost() >= best_.cost) return false;
    best_.feasible = true;
    best_.cost = search.cost();
    best_.choice = search.choice();
    if (!incumbent_ || &*incumbent_ != &search) incumbent_.emplace(search);
    return true;
  }

  /// The target of Polyak's step: the best feasible cost, or a guess above the bound.
  [[nodiscard]] double target(double bound) const {
    return best_.feasible ? static_cast<double>(best_.cost) : 1.2 * std::abs(bound) + 1;
  }

  /// Message passing under the current multipliers; returns the dual value L(lambda).
  double solveDual() {
    ++budget_.moves;
    passing_.setUsagePrice(nodePrices(index_, multipliers_));
    for (int i = 0; i < kSweeps; ++i) passing_.sweep();
    const double dual =
        passing_.lowerBound() - static_cast<double>(index_.limit) *
                                    std::accumulate(multipliers_.begin(), multipliers_.end(), 0.0);
    if (dual > bestBound_) {
      bestBound_ = dual;
      stalled_ = 0;
    } else if (++stalled_ >= kPatience) {
      theta_ /= 2;
      stalled_ = 0;
    }
    return dual;
  }

  /// A projected subgradient step on the multipliers, the gradient being the dual's labelling's
  /// usage over the limit per segment.
  void step(double dual, const std::vector<int>& labels) {
    const double limit = static_cast<double>(index_.limit);
    std::vector<int64_t> usage;
    usageProfile(index_, labels, usage);
    std::vector<double> gradient(usage.size());
    double norm = 0;
    for (size_t t = 0; t < usage.size(); ++t) {
      double excess = static_cast<double>(usage[t]) - limit;
      if (multipliers_[t] <= 0 && excess < 0) excess = 0;  // projected onto lambda >= 0
      gradient[t] = excess;
      norm += excess * excess;
    }
    if (norm <= 0) return;
    const double length = theta_ * std::max(target(dual) - dual, 0.0) / norm;
    for (size_t t = 0; t < usage.size(); ++t) {
      multipliers_[t] = std::max(0.0, multipliers_[t] + length * gradient[t]);
    }
  }

  /// Raises the prices of over-full segments from a copy of the multipliers until the rounded
  /// labelling fits, then repairs, descends and polishes it.
  void drive(int64_t round) {
    const std::vector<double> messages = passing_.messages();
    std::vector<double> driven = multipliers_;
    double total = 0;
    int priced = 0;
    for (double multiplier : driven) {
      total += multiplier;
      priced += multiplier > 0;
    }
    // A segment over the limit gains a tenth of the mean multiplier per round, so that one
    // priced at zero gets dearer too; with none priced yet, the price at which the whole limit
    // costs the best solution, spread over the timeline.
    const double nudge =
        0.1 * (priced > 0 ? total / priced
                          : target(0) / (static_cast<double>(index_.limit) *
                                         static_cast<double>(std::max<size_t>(driven.size(), 1))));
    std::vector<int64_t> usage;
    for (int r = 0; r < kDriveRounds && !budget_.spent(); ++r) {
      if (usageProfile(index_, passing_.labels(), usage) <= index_.limit) break;
      for (size_t t = 0; t < usage.size(); ++t) {
        if (usage[t] > index_.limit) driven[t] = driven[t] * driveGrowth_ + nudge;
      }
      passing_.setUsagePrice(nodePrices(index_, driven));
      passing_.sweep();
      passing_.forward();
    }
    Search polish(index_, seed_ + static_cast<uint64_t>(round));
    polish.assign(passing_.labels());
    bool better = false;
    if (polish.repair()) {
      polish.descend(everyNode());
      polish.improve(0, kPolishMoves);
      better = keep(polish);
    }
    // A drive that finds nothing better gives its polish to the best solution instead.
    if (!better && incumbent_) {
      incumbent_->improve(incumbentMoves_, kPolishMoves);
      incumbentMoves_ += kPolishMoves;
      keep(*incumbent_);
    }
    passing_.restoreMessages(messages);
  }

  const Indexed& index_;
  uint64_t seed_;
  Budget& budget_;
  double driveGrowth_;
  MessagePassing passing_;
  std::vector<double> multipliers_;  ///< lambda_t per segment of the timeline
  Outcome best_;
  std::optional<Search> incumbent_;  ///< the best solution's search, polished further
  int64_t incumbentMoves_ = 0;
  double bestBound_ = -std::numeric_limits<double>::infinity();
  double theta_ = 1;
  int stalled_ = 0;
};

}  // namespace

Outcome lagrangianSearch(const Indexed& index, uint64_t seed, Budget& budget, double driveGrowth) {
  return LagrangianSearch(index, seed, budget, driveGrowth).run();
}

}  // namespace autopar::search::local
