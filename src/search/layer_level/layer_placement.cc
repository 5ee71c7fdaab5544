#include "search/layer_level/layer_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "search/layer_level/placement_model.h"
#include "search/layer_level/stage_options.h"

namespace autopar::search {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// At most 2^24 stage options (24 bytes each, and a 16-byte reach entry): 640 MiB.
constexpr int64_t kMaxStageOptions = int64_t{1} << 24;

/// Stage `stage`'s counts in a placement (entry k V + c from virtual stage c P + s).
StageLoad stageLoad(const PlacementModel& model, const StackCounts& layers,
                    const StackCounts& recomputed, int64_t stage) {
  StageLoad load;
  const auto stages = static_cast<size_t>(model.problem().stages);
  for (size_t k = 0; k < model.stacks(); ++k) {
    for (size_t c = 0; c < model.chunks(); ++c) {
      load.layers.push_back(layers[k][c * stages + static_cast<size_t>(stage)]);
      load.recomputed.push_back(recomputed[k][c * stages + static_cast<size_t>(stage)]);
    }
  }
  return load;
}

/// For one bottleneck B: the least sum of fill_s over placements with every stage at most B (with
/// `designate`, over every stage but one, which the program chooses), and the layer count of each
/// stage achieving it (empty when none fits).
struct Packing {
  double cost = kInfinity;
  std::vector<int64_t> counts;
};

/// The layers placed before each stage (boundary s = 0 .. P) that a packing at B can reach: at
/// most what the stages before can hold, at least what the stages after cannot, each stage
/// holding its fewest at least. Empty when some boundary has none. Near the best bottleneck the
/// windows are a few layers wide, so the program is linear in layers.
struct Windows {
  std::vector<int64_t> low, high, most;
};

std::optional<Windows> windowsAt(const PlacementProblem& p, const StageOptions& options,
                                 double bottleneck) {
  const int64_t total = p.layers();
  const int64_t least = options.minLayers();
  const auto stages = static_cast<size_t>(p.stages);
  Windows w{std::vector<int64_t>(stages + 1), std::vector<int64_t>(stages + 1),
            std::vector<int64_t>(stages)};
  for (size_t s = 0; s < stages; ++s) {
    w.most[s] = options.mostLayers(static_cast<int64_t>(s), bottleneck);
    if (w.most[s] < least) return std::nullopt;
  }
  int64_t after = 0;  // the most the stages from s on hold together
  for (size_t s = stages + 1; s-- > 0;) {
    if (s < stages) after = std::min(total, after + w.most[s]);
    w.low[s] = std::max(static_cast<int64_t>(s) * least, total - after);
  }
  w.high[0] = 0;
  for (size_t s = 0; s < stages; ++s) {
    w.high[s + 1] =
        std::min(w.high[s] + w.most[s], total - static_cast<int64_t>(stages - s - 1) * least);
  }
  for (size_t s = 0; s <= stages; ++s) {
    if (w.low[s] > w.high[s]) return std::nullopt;
  }
  return w;
}

Packing pack(const PlacementProblem& p, const StageOptions& options, double bottleneck,
             bool designate) {
  const std::optional<Windows> windows = windowsAt(p, options, bottleneck);
  if (!windows) return {};
  const Windows& w = *windows;
  const int64_t least = options.minLayers();
  const size_t flags = designate ? 2 : 1;
  // cost[slot(s, u, f)]: the least cost of stages < s holding the first u layers (u in boundary
  // s's window), f whether the stage left out is among them; pick: the last stage's count and
  // its flag before.
  std::vector<size_t> offset(w.low.size() + 1, 0);
  for (size_t s = 0; s < w.low.size(); ++s) {
    offset[s + 1] = offset[s] + static_cast<size_t>(w.high[s] - w.low[s] + 1) * flags;
  }
  const auto slot = [&](int64_t s, int64_t used, size_t flag) {
    const auto b = static_cast<size_t>(s);
    return offset[b] + static_cast<size_t>(used - w.low[b]) * flags + flag;
  };
  std::vector<double> cost(offset.back(), kInfinity);
  std::vector<std::pair<int64_t, size_t>> pick(cost.size(), {0, 0});
  cost[slot(0, 0, 0)] = 0;
  for (int64_t s = 0; s < p.stages; ++s) {
    const auto b = static_cast<size_t>(s);
    for (int64_t from = w.low[b]; from <= w.high[b]; ++from) {
      const int64_t fewest = std::max(least, w.low[b + 1] - from);
      const int64_t most = std::min(w.most[b], w.high[b + 1] - from);
      for (size_t flag = 0; flag < flags; ++flag) {
        const double sofar = cost[slot(s, from, flag)];
        if (sofar == kInfinity) continue;
        for (int64_t count = fewest; count <= most; ++count) {
          const StageOption& option = options.at(s, from, count);
          if (!option.fits || option.seconds > bottleneck) continue;
          // With `designate`, this stage may be the one left out (it adds nothing).
          for (size_t next = flag; next < (designate ? 2 : flag + 1); ++next) {
            const double added = next != flag ? 0.0 : option.fill;
            const size_t to = slot(s + 1, from + count, next);
            if (sofar + added < cost[to]) {
              cost[to] = sofar + added;
              pick[to] = {count, flag};
            }
          }
        }
      }
    }
  }
  const int64_t total = p.layers();
  Packing packing;
  size_t flag = flags - 1;
  packing.cost = cost[slot(p.stages, total, flag)];
  if (packing.cost == kInfinity) return packing;
  packing.counts.assign(static_cast<size_t>(p.stages), 0);
  for (int64_t s = p.stages, used = total; s > 0; --s) {
    const auto [count, before] = pick[slot(s, used, flag)];
    packing.counts[static_cast<size_t>(s - 1)] = count;
    used -= count;
    flag = before;
  }
  return packing;
}

Placement placementOf(const PlacementModel& model, const StageOptions& options,
                      const std::vector<int64_t>& counts) {
  const PlacementProblem& p = model.problem();
  const auto virtualStages = static_cast<size_t>(p.stages) * model.chunks();
  StackCounts layers(model.stacks(), std::vector<int64_t>(virtualStages, 0));
  StackCounts recomputed = layers;
  int64_t from = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    const StageLoad load = options.load(static_cast<int64_t>(s), from, counts[s]);
    for (size_t k = 0; k < model.stacks(); ++k) {
      for (size_t c = 0; c < model.chunks(); ++c) {
        layers[k][c * counts.size() + s] = load.layers[k * model.chunks() + c];
        recomputed[k][c * counts.size() + s] = load.recomputed[k * model.chunks() + c];
      }
    }
    from += counts[s];
  }
  return evaluatePlacement(p, std::move(layers), std::move(recomputed));
}

/// The leanest load a stage can hold: one layer per chunk (at its place in the stacks when
/// contiguous), all recomputed.
int64_t leanestBytes(const PlacementModel& model, int64_t stage) {
  const PlacementProblem& p = model.problem();
  std::vector<int64_t> layers(model.stacks() * model.chunks(), 0);
  if (model.chunks() > 1) {
    std::fill(layers.begin(), layers.end(), 1);
  } else {
    // Stage s's first layer, when every earlier stage holds one.
    int64_t position = std::min(stage, p.layers() - 1);
    size_t k = 0;
    while (position >= p.stacks[k].layers) position -= p.stacks[k++].layers;
    layers[k] = 1;
  }
  return model.bytes(stage, {layers.data(), layers.data()});
}

Error noPlacement(const PlacementModel& model, const StageOptions& options) {
  // Name a stage that cannot hold even its fewest layers, else how many the stages can hold.
  const PlacementProblem& p = model.problem();
  const int64_t total = p.layers();
  const int64_t least = options.minLayers();
  int64_t capacity = 0;
  for (int64_t s = 0; s < p.stages; ++s) {
    const int64_t most = options.mostLayers(s, kInfinity);
    if (most == 0) {
      return Error{fmt::format(
          "no placement of {} layers on {} stages fits in {} bytes: stage {} needs {} bytes for {}",
          total, p.stages, p.memoryLimitBytes, s, leanestBytes(model, s),
          least == 1 ? "a single recomputed layer"
                     : fmt::format("{} recomputed layers (one per chunk)", least))};
    }
    capacity += most;
  }
  return Error{fmt::format(
      "no placement of {} layers on {} stages fits in {} bytes: with full recompute the stages "
      "hold at most {} layers together",
      total, p.stages, p.memoryLimitBytes, capacity)};
}

Status checkProblem(const PlacementProblem& problem) {
  if (problem.stacks.empty() || problem.stacks.size() > 2) {
    return Error{fmt::format("layer placement takes one or two layer stacks, not {}",
                             problem.stacks.size())};
  }
  if (problem.chunks() > 1 && problem.stacks.size() > 1) {
    return Error{
        "interleaved layer placement takes one layer stack (a vision tower is not "
        "interleaved)"};
  }
  const int64_t least = problem.stages * problem.chunks();
  if (problem.stages < 1 || problem.layers() < least) {
    return Error{
        fmt::format("{} layers cannot fill {} stages of {} chunk(s) (one layer each at least)",
                    problem.layers(), problem.stages, problem.chunks())};
  }
  // Stage options per stage and run (stage_options.h): bounded before they are allocated.
  const int64_t first = problem.stacks.front().layers;
  const int64_t second = problem.stacks.size() > 1 ? problem.stacks[1].layers : 0;
  if (first + 1 > kMaxStageOptions / (second + 1) / problem.stages) {
    return Error{fmt::format(
        "placing {} on {} stages takes {} x {} stage options, more than the {} the placement "
        "holds; use fewer pipeline stages",
        problem.stacks.size() > 1 ? fmt::format("{} + {} layers", first, second)
                                  : fmt::format("{} layers", first),
        problem.stages, problem.stages, (first + 1) * (second + 1), kMaxStageOptions)};
  }
  return {};
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

int64_t PlacementProblem::chunks() const { return chunksOf(schedule, virtualStages); }

Placement evaluatePlacement(const PlacementProblem& problem, StackCounts layers,
                            StackCounts recomputed) {
  const PlacementModel model(problem);
  PipelineClock clock(problem.schedule, problem.chunks(), problem.microBatches, problem.stages,
                      problem.sendSeconds);
  Placement placement{std::move(layers), std::move(recomputed), 0, {}};
  for (int64_t s = 0; s < problem.stages; ++s) {
    const StageLoad load = stageLoad(model, placement.layers, placement.recomputed, s);
    clock.addStage(model.seconds(s, load.view()), model.weightSeconds(s, load.view()));
    placement.peakBytes.push_back(model.bytes(s, load.view()));
  }
  placement.stepSeconds = clock.seconds();
  return placement;
}

Expected<Placement> placeLayers(const PlacementProblem& problem) {
  if (Status valid = checkProblem(problem); !valid) return valid.error();
  const PlacementModel model(problem);
  const StageOptions options(model);
  const std::vector<double> bottlenecks = options.bottlenecks();
  // The least bottleneck that fits: a larger one only allows more placements. First the least
  // at which the stages can hold every layer (the program's windows are not empty), which with
  // one stack is the answer: a stage holds any count up to its most. With two stacks a stage's
  // most may need the cheap stack's layers that another stage runs, so the program itself
  // narrows it down from there.
  const auto leastWhere = [&](size_t lo, auto fits) {
    size_t hi = bottlenecks.size() - 1;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      fits(mid) ? hi = mid : lo = mid + 1;
    }
    return lo;
  };
  const auto holds = [&](size_t i) {
    return windowsAt(problem, options, bottlenecks[i]).has_value();
  };
  if (bottlenecks.empty() || !holds(bottlenecks.size() - 1)) return noPlacement(model, options);
  size_t lo = leastWhere(0, holds);
  if (problem.stacks.size() > 1) {
    const auto packs = [&](size_t i) {
      return !pack(problem, options, bottlenecks[i], false).counts.empty();
    };
    if (!packs(bottlenecks.size() - 1)) return noPlacement(model, options);
    lo = leastWhere(lo, packs);
  }
  // The step at bottleneck B is m B + sum_s fill_s - max_s fill_s + sends. Under 1F1B and
  // interleaved the largest fill is the slowest stage's, fill(B); under ZB-H1 it depends on the
  // stage's W, so the program chooses the stage to leave out (schedule_model.h).
  const bool designate = problem.schedule == ir::Schedule::kZeroBubbleH1;
  double base = problem.first.seconds + problem.last.seconds;
  double weights = problem.first.weightGradientSeconds + problem.last.weightGradientSeconds;
  for (const LayerStack& stack : problem.stacks) {
    const auto n = static_cast<double>(stack.layers);
    base += n * (stack.layer.forwardSeconds + stack.layer.backwardSeconds);
    weights += n * stack.layer.weightGradientSeconds;
  }
  const auto m = static_cast<double>(problem.microBatches);
  const double sends = 2 * static_cast<double>(problem.stages - 1) * problem.sendSeconds;
  // Without recompute the fills sum to at least the fill of all the work together, and no fill
  // exceeds B.
  const double leastFill = model.fill(base, weights);
  const auto leftOut = [&](double bottleneck) {
    return designate ? 0.0 : model.fill(bottleneck, 0);
  };
  const auto lowerBound = [&](double bottleneck) {
    const double others =
        designate ? std::max(leastFill - bottleneck, 0.0) : leastFill - leftOut(bottleneck);
    return m * bottleneck + others + sends;
  };
  // 1F1B with one micro-batch: the step is the total work, least at the loosest bottleneck.
  if (m == 1 && problem.schedule == ir::Schedule::k1F1B) lo = bottlenecks.size() - 1;
  double bestStep = kInfinity;
  std::vector<int64_t> best;
  for (size_t i = lo; i < bottlenecks.size(); ++i) {
    const double b = bottlenecks[i];
    // A lower bound of the step at b, rising with b: later bottlenecks only cost more.
    if (lowerBound(b) >= bestStep) break;
    const Packing packing = pack(problem, options, b, designate);
    if (packing.counts.empty()) continue;
    const double step = m * b + packing.cost - leftOut(b) + sends;
    if (step < bestStep) {
      bestStep = step;
      best = packing.counts;
    }
  }
  if (best.empty()) return noPlacement(model, options);
  return placementOf(model, options, best);
}

}  // namespace autopar::search
