#include "search/layer_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace autopar::search {

namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

double stageSeconds(const PlacementProblem& p, int64_t stage, int64_t n, int64_t c) {
  double seconds = static_cast<double>(n) * (p.layer.forwardSeconds + p.layer.backwardSeconds) +
                   static_cast<double>(c) * p.layer.recomputeSeconds;
  if (stage == 0) seconds += p.first.seconds;
  if (stage == p.stages - 1) seconds += p.last.seconds;
  return seconds;
}

int64_t inFlight(const PlacementProblem& p, int64_t stage) {
  return std::min(p.stages - stage, p.microBatches);
}

int64_t stageBytes(const PlacementProblem& p, int64_t stage, int64_t n, int64_t c) {
  const int64_t k = inFlight(p, stage);
  int64_t bytes = n * p.layer.staticBytes +
                  k * ((n - c) * p.layer.activationBytes + c * p.layer.recomputedActivationBytes);
  if (stage == 0) bytes += p.first.staticBytes + k * p.first.activationBytes;
  if (stage == p.stages - 1) bytes += p.last.staticBytes + k * p.last.activationBytes;
  return bytes;
}

/// The fewest recomputed layers that make the stage fit, or kNone.
int64_t leastRecompute(const PlacementProblem& p, int64_t stage, int64_t n) {
  const int64_t over = stageBytes(p, stage, n, 0) - p.memoryLimitBytes;
  if (over <= 0) return 0;
  const int64_t saved =
      inFlight(p, stage) * (p.layer.activationBytes - p.layer.recomputedActivationBytes);
  if (saved <= 0) return kNone;
  const int64_t c = (over + saved - 1) / saved;
  return c <= n ? c : kNone;
}

}  // namespace

Placement evaluatePlacement(const PlacementProblem& problem, std::vector<int64_t> layers,
                            std::vector<int64_t> recomputed) {
  Placement placement{std::move(layers), std::move(recomputed), 0, {}};
  double total = 0;
  double slowest = 0;
  for (int64_t s = 0; s < problem.stages; ++s) {
    const auto i = static_cast<size_t>(s);
    const double seconds = stageSeconds(problem, s, placement.layers[i], placement.recomputed[i]);
    total += seconds;
    slowest = std::max(slowest, seconds);
    placement.peakBytes.push_back(
        stageBytes(problem, s, placement.layers[i], placement.recomputed[i]));
  }
  placement.stepSeconds = total + static_cast<double>(problem.microBatches - 1) * slowest;
  return placement;
}

Expected<Placement> placeLayers(const PlacementProblem& problem) {
  const int64_t stages = problem.stages;
  const int64_t layers = problem.layers;
  if (stages < 1 || layers < stages) {
    return Error{
        fmt::format("{} layers cannot fill {} stages (one layer each at least)", layers, stages)};
  }
  // Per stage and layer count: the recompute it needs and its time.
  const int64_t most = layers - (stages - 1);
  std::vector<std::vector<int64_t>> need(static_cast<size_t>(stages));
  std::vector<std::vector<double>> seconds(static_cast<size_t>(stages));
  std::vector<double> bottlenecks;
  for (int64_t s = 0; s < stages; ++s) {
    need[static_cast<size_t>(s)].assign(static_cast<size_t>(most + 1), kNone);
    seconds[static_cast<size_t>(s)].assign(static_cast<size_t>(most + 1), 0);
    for (int64_t n = 1; n <= most; ++n) {
      const int64_t c = leastRecompute(problem, s, n);
      need[static_cast<size_t>(s)][static_cast<size_t>(n)] = c;
      if (c == kNone) continue;
      const double t = stageSeconds(problem, s, n, c);
      seconds[static_cast<size_t>(s)][static_cast<size_t>(n)] = t;
      bottlenecks.push_back(t);
    }
  }
  std::sort(bottlenecks.begin(), bottlenecks.end());
  bottlenecks.erase(std::unique(bottlenecks.begin(), bottlenecks.end()), bottlenecks.end());
  const double base =
      static_cast<double>(layers) * (problem.layer.forwardSeconds + problem.layer.backwardSeconds) +
      problem.first.seconds + problem.last.seconds;
  const double waits = static_cast<double>(problem.microBatches - 1);
  double bestStep = std::numeric_limits<double>::infinity();
  Placement best;
  // least[s][u]: the fewest recomputed layers over stages < s holding u layers; pick[s][u]: the
  // layer count of stage s - 1 that achieves it.
  const auto width = static_cast<size_t>(layers + 1);
  std::vector<std::vector<int64_t>> least(static_cast<size_t>(stages + 1));
  std::vector<std::vector<int64_t>> pick(static_cast<size_t>(stages + 1));
  for (double bottleneck : bottlenecks) {
    if (base + waits * bottleneck >= bestStep) break;  // later bottlenecks only cost more
    for (auto& row : least) row.assign(width, kNone);
    for (auto& row : pick) row.assign(width, 0);
    least[0][0] = 0;
    for (int64_t s = 0; s < stages; ++s) {
      const auto si = static_cast<size_t>(s);
      for (int64_t used = 0; used <= layers; ++used) {
        const int64_t sofar = least[si][static_cast<size_t>(used)];
        if (sofar == kNone) continue;
        for (int64_t n = 1; used + n + (stages - 1 - s) <= layers; ++n) {
          const int64_t c = need[si][static_cast<size_t>(n)];
          if (c == kNone || seconds[si][static_cast<size_t>(n)] > bottleneck) continue;
          auto& slot = least[si + 1][static_cast<size_t>(used + n)];
          if (sofar + c < slot) {
            slot = sofar + c;
            pick[si + 1][static_cast<size_t>(used + n)] = n;
          }
        }
      }
    }
    const int64_t recomputed = least[static_cast<size_t>(stages)][static_cast<size_t>(layers)];
    if (recomputed == kNone) continue;
    const double step = base + static_cast<double>(recomputed) * problem.layer.recomputeSeconds +
                        waits * bottleneck;
    if (step >= bestStep) continue;
    std::vector<int64_t> counts(static_cast<size_t>(stages));
    std::vector<int64_t> recompute(static_cast<size_t>(stages));
    for (int64_t s = stages, used = layers; s > 0; --s) {
      const int64_t n = pick[static_cast<size_t>(s)][static_cast<size_t>(used)];
      counts[static_cast<size_t>(s - 1)] = n;
      recompute[static_cast<size_t>(s - 1)] =
          need[static_cast<size_t>(s - 1)][static_cast<size_t>(n)];
      used -= n;
    }
    best = evaluatePlacement(problem, std::move(counts), std::move(recompute));
    bestStep = best.stepSeconds;
  }
  if (best.layers.empty()) {
    // Name a stage that cannot hold even one layer, else how many layers the stages can hold.
    int64_t capacity = 0;
    for (int64_t s = 0; s < stages; ++s) {
      int64_t mostFitting = 0;
      for (int64_t n = 1; n <= most; ++n) {
        if (need[static_cast<size_t>(s)][static_cast<size_t>(n)] != kNone) mostFitting = n;
      }
      if (mostFitting == 0) {
        return Error{fmt::format(
            "no placement of {} layers on {} stages fits in {} bytes: stage {} needs {} bytes "
            "for a single recomputed layer",
            layers, stages, problem.memoryLimitBytes, s, stageBytes(problem, s, 1, 1))};
      }
      capacity += mostFitting;
    }
    return Error{fmt::format(
        "no placement of {} layers on {} stages fits in {} bytes: with full recompute the stages "
        "hold at most {} layers together",
        layers, stages, problem.memoryLimitBytes, capacity)};
  }
  return best;
}

Expected<Placement> placeLayersBruteForce(const PlacementProblem& problem) {
  if (problem.stages < 1 || problem.layers < problem.stages) return Error{"no placement fits"};
  Placement best;
  best.stepSeconds = std::numeric_limits<double>::infinity();
  std::vector<int64_t> layers(static_cast<size_t>(problem.stages));
  std::vector<int64_t> recomputed(static_cast<size_t>(problem.stages));
  // Every recompute count per stage, for every composition of the layers into the stages.
  std::function<void(int64_t)> chooseRecompute = [&](int64_t s) {
    if (s == problem.stages) {
      Placement trial = evaluatePlacement(problem, layers, recomputed);
      const bool fits = std::all_of(trial.peakBytes.begin(), trial.peakBytes.end(),
                                    [&](int64_t b) { return b <= problem.memoryLimitBytes; });
      if (fits && trial.stepSeconds < best.stepSeconds) best = std::move(trial);
      return;
    }
    for (int64_t c = 0; c <= layers[static_cast<size_t>(s)]; ++c) {
      recomputed[static_cast<size_t>(s)] = c;
      chooseRecompute(s + 1);
    }
  };
  std::function<void(int64_t, int64_t)> chooseLayers = [&](int64_t s, int64_t left) {
    if (s == problem.stages - 1) {
      if (left < 1) return;
      layers[static_cast<size_t>(s)] = left;
      chooseRecompute(0);
      return;
    }
    for (int64_t n = 1; n <= left - (problem.stages - 1 - s); ++n) {
      layers[static_cast<size_t>(s)] = n;
      chooseLayers(s + 1, left - n);
    }
  };
  chooseLayers(0, problem.layers);
  if (best.layers.empty()) return Error{"no placement fits"};
  return best;
}

}  // namespace autopar::search
