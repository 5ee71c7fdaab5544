#include "search/layer_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

namespace autopar::search {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// What one stage holds: layers and recomputed layers per stack (at most two stacks).
struct StageLoad {
  std::array<int64_t, 2> layers{};
  std::array<int64_t, 2> recomputed{};
};

int64_t inFlight(const PlacementProblem& p, int64_t stage) {
  return std::min(p.zeroBubble ? p.stages : p.stages - stage, p.microBatches);
}

double recomputeSeconds(const PlacementProblem& p, const StageLoad& load) {
  double seconds = 0;
  for (size_t k = 0; k < p.stacks.size(); ++k) {
    seconds += static_cast<double>(load.recomputed[k]) * p.stacks[k].layer.recomputeSeconds;
  }
  return seconds;
}

double stageSeconds(const PlacementProblem& p, int64_t stage, const StageLoad& load) {
  double seconds = recomputeSeconds(p, load);
  for (size_t k = 0; k < p.stacks.size(); ++k) {
    const LayerCost& layer = p.stacks[k].layer;
    seconds += static_cast<double>(load.layers[k]) * (layer.forwardSeconds + layer.backwardSeconds);
  }
  if (stage == 0) seconds += p.first.seconds;
  if (stage == p.stages - 1) seconds += p.last.seconds;
  return seconds;
}

int64_t stageBytes(const PlacementProblem& p, int64_t stage, const StageLoad& load) {
  const int64_t k = inFlight(p, stage);
  int64_t bytes = 0;
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    const LayerCost& layer = p.stacks[i].layer;
    const int64_t n = load.layers[i];
    const int64_t c = load.recomputed[i];
    bytes += n * layer.staticBytes +
             k * ((n - c) * layer.activationBytes + c * layer.recomputedActivationBytes);
  }
  if (stage == 0) bytes += p.first.staticBytes + k * p.first.activationBytes;
  if (stage == p.stages - 1) bytes += p.last.staticBytes + k * p.last.activationBytes;
  return bytes;
}

/// The layers of each stack in positions [from, from + count) of the concatenated stacks.
StageLoad loadOf(const PlacementProblem& p, int64_t from, int64_t count) {
  StageLoad load;
  int64_t start = 0;
  for (size_t k = 0; k < p.stacks.size(); ++k) {
    const int64_t end = start + p.stacks[k].layers;
    load.layers[k] = std::max<int64_t>(0, std::min(end, from + count) - std::max(start, from));
    start = end;
  }
  return load;
}

/// The stage with the cheapest recompute that makes it fit (every count of the first stack's
/// recompute, the fewest of the second's that then fits), or false when none does.
bool leastRecompute(const PlacementProblem& p, int64_t stage, StageLoad& load) {
  const int64_t over = stageBytes(p, stage, load) - p.memoryLimitBytes;
  if (over <= 0) return true;
  const int64_t k = inFlight(p, stage);
  std::array<int64_t, 2> saved{};
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    const LayerCost& layer = p.stacks[i].layer;
    saved[i] = k * (layer.activationBytes - layer.recomputedActivationBytes);
  }
  double best = kInfinity;
  StageLoad chosen = load;
  for (int64_t first = 0; first <= load.layers[0]; ++first) {
    const int64_t left = over - first * saved[0];
    int64_t second = 0;
    if (left > 0) {
      if (saved[1] <= 0) continue;
      second = (left + saved[1] - 1) / saved[1];
      if (second > load.layers[1]) continue;
    }
    StageLoad trial = load;
    trial.recomputed = {first, second};
    const double seconds = recomputeSeconds(p, trial);
    if (seconds < best) {
      best = seconds;
      chosen = trial;
    }
  }
  if (best == kInfinity) return false;
  load = chosen;
  return true;
}

/// One stage holding positions [from, from + count): whether it fits and at what cost.
struct StageOption {
  bool fits = false;
  double seconds = 0;
  double recompute = 0;
  StageLoad load;
};

/// Every stage's options, indexed [stage][from][count].
class StageOptions {
 public:
  explicit StageOptions(const PlacementProblem& p)
      : total_(p.layers()), options_(static_cast<size_t>(p.stages * (total_ + 1) * (total_ + 1))) {
    for (int64_t s = 0; s < p.stages; ++s) {
      // Earlier stages hold at least one layer each, later ones too.
      for (int64_t from = s; from + (p.stages - s) <= total_; ++from) {
        for (int64_t count = 1; from + count + (p.stages - 1 - s) <= total_; ++count) {
          StageOption& option = options_[index(s, from, count)];
          option.load = loadOf(p, from, count);
          option.fits = leastRecompute(p, s, option.load);
          if (!option.fits) continue;
          option.seconds = stageSeconds(p, s, option.load);
          option.recompute = recomputeSeconds(p, option.load);
        }
      }
    }
  }
  [[nodiscard]] const StageOption& at(int64_t s, int64_t from, int64_t count) const {
    return options_[index(s, from, count)];
  }
  /// Every distinct stage time that fits, ascending.
  [[nodiscard]] std::vector<double> bottlenecks() const {
    std::vector<double> values;
    for (const StageOption& option : options_) {
      if (option.fits) values.push_back(option.seconds);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
  }

 private:
  [[nodiscard]] size_t index(int64_t s, int64_t from, int64_t count) const {
    return static_cast<size_t>((s * (total_ + 1) + from) * (total_ + 1) + count);
  }
  int64_t total_;
  std::vector<StageOption> options_;
};

/// For one bottleneck: the least total recompute time over placements with every stage at most
/// `bottleneck`, and the layer count of each stage achieving it (empty when none fits).
struct Packing {
  double recompute = kInfinity;
  std::vector<int64_t> counts;
};

Packing pack(const PlacementProblem& p, const StageOptions& options, double bottleneck) {
  const int64_t total = p.layers();
  const auto width = static_cast<size_t>(total + 1);
  // least[s][u]: the least recompute over stages < s holding positions [0, u); pick: stage s-1's
  // layer count achieving it.
  std::vector<std::vector<double>> least(static_cast<size_t>(p.stages + 1),
                                         std::vector<double>(width, kInfinity));
  std::vector<std::vector<int64_t>> pick(static_cast<size_t>(p.stages + 1),
                                         std::vector<int64_t>(width, 0));
  least[0][0] = 0;
  for (int64_t s = 0; s < p.stages; ++s) {
    const auto si = static_cast<size_t>(s);
    for (int64_t from = s; from + (p.stages - s) <= total; ++from) {
      const double sofar = least[si][static_cast<size_t>(from)];
      if (sofar == kInfinity) continue;
      for (int64_t count = 1; from + count + (p.stages - 1 - s) <= total; ++count) {
        const StageOption& option = options.at(s, from, count);
        if (!option.fits || option.seconds > bottleneck) continue;
        double& slot = least[si + 1][static_cast<size_t>(from + count)];
        if (sofar + option.recompute < slot) {
          slot = sofar + option.recompute;
          pick[si + 1][static_cast<size_t>(from + count)] = count;
        }
      }
    }
  }
  Packing packing;
  packing.recompute = least[static_cast<size_t>(p.stages)][static_cast<size_t>(total)];
  if (packing.recompute == kInfinity) return packing;
  packing.counts.assign(static_cast<size_t>(p.stages), 0);
  for (int64_t s = p.stages, used = total; s > 0; --s) {
    const int64_t count = pick[static_cast<size_t>(s)][static_cast<size_t>(used)];
    packing.counts[static_cast<size_t>(s - 1)] = count;
    used -= count;
  }
  return packing;
}

Placement placementOf(const PlacementProblem& p, const StageOptions& options,
                      const std::vector<int64_t>& counts) {
  StackCounts layers(p.stacks.size(), std::vector<int64_t>(counts.size(), 0));
  StackCounts recomputed = layers;
  int64_t from = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    const StageLoad& load = options.at(static_cast<int64_t>(s), from, counts[s]).load;
    for (size_t k = 0; k < p.stacks.size(); ++k) {
      layers[k][s] = load.layers[k];
      recomputed[k][s] = load.recomputed[k];
    }
    from += counts[s];
  }
  return evaluatePlacement(p, std::move(layers), std::move(recomputed));
}

Error noPlacement(const PlacementProblem& p, const StageOptions& options) {
  // Name a stage that cannot hold even one layer, else how many layers the stages can hold.
  const int64_t total = p.layers();
  int64_t capacity = 0;
  for (int64_t s = 0; s < p.stages; ++s) {
    int64_t most = 0;
    for (int64_t from = s; from + (p.stages - s) <= total; ++from) {
      for (int64_t count = 1; from + count + (p.stages - 1 - s) <= total; ++count) {
        if (options.at(s, from, count).fits) most = std::max(most, count);
      }
    }
    if (most == 0) {
      StageLoad one = loadOf(p, std::min(s, total - 1), 1);
      one.recomputed = one.layers;
      return Error{fmt::format(
          "no placement of {} layers on {} stages fits in {} bytes: stage {} needs {} bytes for a "
          "single recomputed layer",
          total, p.stages, p.memoryLimitBytes, s, stageBytes(p, s, one))};
    }
    capacity += most;
  }
  return Error{fmt::format(
      "no placement of {} layers on {} stages fits in {} bytes: with full recompute the stages "
      "hold at most {} layers together",
      total, p.stages, p.memoryLimitBytes, capacity)};
}

}  // namespace

StackCounts zerosLike(const StackCounts& counts) {
  StackCounts zeros;
  for (const auto& stack : counts) zeros.emplace_back(stack.size(), 0);
  return zeros;
}

int64_t PlacementProblem::layers() const {
  int64_t total = 0;
  for (const LayerStack& stack : stacks) total += stack.layers;
  return total;
}

Placement evaluatePlacement(const PlacementProblem& problem, StackCounts layers,
                            StackCounts recomputed) {
  Placement placement{std::move(layers), std::move(recomputed), 0, {}};
  double total = 0;
  double slowest = 0;
  for (int64_t s = 0; s < problem.stages; ++s) {
    const auto i = static_cast<size_t>(s);
    StageLoad load;
    for (size_t k = 0; k < problem.stacks.size(); ++k) {
      load.layers[k] = placement.layers[k][i];
      load.recomputed[k] = placement.recomputed[k][i];
    }
    const double seconds = stageSeconds(problem, s, load);
    total += seconds;
    slowest = std::max(slowest, seconds);
    placement.peakBytes.push_back(stageBytes(problem, s, load));
  }
  placement.stepSeconds = total + static_cast<double>(problem.microBatches - 1) * slowest;
  return placement;
}

Expected<Placement> placeLayers(const PlacementProblem& problem) {
  if (problem.stacks.empty() || problem.stacks.size() > 2) {
    return Error{fmt::format("layer placement takes one or two layer stacks, not {}",
                             problem.stacks.size())};
  }
  const int64_t stages = problem.stages;
  const int64_t total = problem.layers();
  if (stages < 1 || total < stages) {
    return Error{
        fmt::format("{} layers cannot fill {} stages (one layer each at least)", total, stages)};
  }
  const StageOptions options(problem);
  const std::vector<double> bottlenecks = options.bottlenecks();
  // The least bottleneck that fits: a larger one only allows more placements.
  auto fits = [&](size_t i) { return !pack(problem, options, bottlenecks[i]).counts.empty(); };
  if (bottlenecks.empty() || !fits(bottlenecks.size() - 1)) return noPlacement(problem, options);
  size_t lo = 0;
  size_t hi = bottlenecks.size() - 1;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    fits(mid) ? hi = mid : lo = mid + 1;
  }
  double base = problem.first.seconds + problem.last.seconds;
  for (const LayerStack& stack : problem.stacks) {
    base += static_cast<double>(stack.layers) *
            (stack.layer.forwardSeconds + stack.layer.backwardSeconds);
  }
  const double waits = static_cast<double>(problem.microBatches - 1);
  // With one micro-batch the slowest stage costs nothing extra: the loosest bottleneck is best.
  if (waits == 0) lo = bottlenecks.size() - 1;
  double bestStep = kInfinity;
  std::vector<int64_t> best;
  for (size_t i = lo; i < bottlenecks.size(); ++i) {
    if (base + waits * bottlenecks[i] >= bestStep) break;  // later bottlenecks only cost more
    const Packing packing = pack(problem, options, bottlenecks[i]);
    if (packing.counts.empty()) continue;
    const double step = base + packing.recompute + waits * bottlenecks[i];
    if (step < bestStep) {
      bestStep = step;
      best = packing.counts;
    }
  }
  return placementOf(problem, options, best);
}

Expected<Placement> placeLayersBruteForce(const PlacementProblem& problem) {
  const int64_t total = problem.layers();
  if (problem.stages < 1 || total < problem.stages) return Error{"no placement fits"};
  Placement best;
  best.stepSeconds = kInfinity;
  const size_t stacks = problem.stacks.size();
  StackCounts layers(stacks, std::vector<int64_t>(static_cast<size_t>(problem.stages), 0));
  StackCounts recomputed = layers;
  // Every recompute count per stack and stage, for every composition of the layers.
  std::function<void(size_t)> chooseRecompute = [&](size_t slot) {
    if (slot == stacks * static_cast<size_t>(problem.stages)) {
      Placement trial = evaluatePlacement(problem, layers, recomputed);
      const bool fits = std::all_of(trial.peakBytes.begin(), trial.peakBytes.end(),
                                    [&](int64_t b) { return b <= problem.memoryLimitBytes; });
      if (fits && trial.stepSeconds < best.stepSeconds) best = std::move(trial);
      return;
    }
    const size_t k = slot % stacks;
    const size_t s = slot / stacks;
    for (int64_t c = 0; c <= layers[k][s]; ++c) {
      recomputed[k][s] = c;
      chooseRecompute(slot + 1);
    }
  };
  std::function<void(int64_t, int64_t)> chooseLayers = [&](int64_t s, int64_t from) {
    const int64_t left = total - from;
    const int64_t most = s == problem.stages - 1 ? left : left - (problem.stages - 1 - s);
    const int64_t least = s == problem.stages - 1 ? left : 1;
    for (int64_t count = least; count <= most; ++count) {
      const StageLoad load = loadOf(problem, from, count);
      for (size_t k = 0; k < stacks; ++k) layers[k][static_cast<size_t>(s)] = load.layers[k];
      if (s == problem.stages - 1) {
        chooseRecompute(0);
      } else {
        chooseLayers(s + 1, from + count);
      }
    }
  };
  chooseLayers(0, 0);
  if (best.layers.empty()) return Error{"no placement fits"};
  return best;
}

}  // namespace autopar::search
