#include "search/layer_level/stage_options.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

namespace autopar::search {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

/// The layers of each stack in positions [from, from + count) of the concatenated stacks.
std::array<int64_t, 2> runOf(const PlacementProblem& p, int64_t from, int64_t count) {
  std::array<int64_t, 2> layers{};
  int64_t start = 0;
  for (size_t k = 0; k < p.stacks.size(); ++k) {
    const int64_t end = start + p.stacks[k].layers;
    layers[k] = std::max<int64_t>(0, std::min(end, from + count) - std::max(start, from));
    start = end;
  }
  return layers;
}

/// A contiguous run with the cheapest recompute that makes it fit (every count of the first
/// stack's recompute, the fewest of the second's that then fits), or false when none does.
bool leastRecompute(const PlacementModel& model, int64_t stage, const std::array<int64_t, 2>& run,
                    std::array<int64_t, 2>& recomputed) {
  const PlacementProblem& p = model.problem();
  recomputed = {};
  const int64_t over = model.bytes(stage, {run.data(), recomputed.data()}) - p.memoryLimitBytes;
  if (over <= 0) return true;
  const int64_t held = model.rows(stage).front().front();
  std::array<int64_t, 2> saved{};
  for (size_t k = 0; k < p.stacks.size(); ++k) {
    const LayerCost& layer = p.stacks[k].layer;
    saved[k] = held * (layer.activationBytes - layer.recomputedActivationBytes);
  }
  if (p.stacks.size() == 1) {
    // The fewest recomputed layers that fit: recompute only adds time.
    if (saved[0] <= 0) return false;
    recomputed[0] = (over + saved[0] - 1) / saved[0];
    return recomputed[0] <= run[0];
  }
  double best = kInfinity;
  for (int64_t first = 0; first <= run[0]; ++first) {
    const int64_t left = over - first * saved[0];
    int64_t second = 0;
    if (left > 0) {
      if (saved[1] <= 0) continue;
      second = (left + saved[1] - 1) / saved[1];
      if (second > run[1]) continue;
    }
    const std::array<int64_t, 2> trial{first, second};
    const double seconds = model.recomputeSeconds({run.data(), trial.data()});
    if (seconds < best) {
      best = seconds;
      recomputed = trial;
    }
  }
  return best < kInfinity;
}

/// The least-recompute balanced split of `layers` layers of one stack over a stage's chunks that
/// fits its peak rows (stage_options.h), by enumerating each chunk's layers (floor or ceiling of
/// layers / V) and recompute in turn and solving the last chunk's recompute directly. Among
/// splits with the least recompute it keeps the one whose slowest chunk is fastest. Bytes per
/// chunk: a n - d r + e, with d what a recomputed layer saves and e the end the chunk carries.
class ChunkSplitter {
 public:
  ChunkSplitter(const PlacementModel& model, int64_t stage, int64_t layers)
      : rows_(model.rows(stage)),
        chunks_(model.chunks()),
        layers_(layers),
        fewest_(layers / static_cast<int64_t>(chunks_)),
        most_((layers + static_cast<int64_t>(chunks_) - 1) / static_cast<int64_t>(chunks_)),
        load_{std::vector<int64_t>(chunks_, 0), std::vector<int64_t>(chunks_, 0)},
        held_(chunks_ + 1, std::vector<int64_t>(rows_.size(), 0)) {
    const LayerCost& layer = model.problem().stacks.front().layer;
    activation_ = layer.activationBytes;
    saved_ = layer.activationBytes - layer.recomputedActivationBytes;
    layerSeconds_ = layer.forwardSeconds + layer.backwardSeconds;
    recomputeSeconds_ = layer.recomputeSeconds;
    // The static bytes depend on the stage's layer count only.
    const std::vector<int64_t> none(chunks_, 0);
    std::vector<int64_t> all = none;
    all.front() = layers;
    capacity_ =
        model.problem().memoryLimitBytes - model.staticBytes(stage, {all.data(), none.data()});
    const PlacementProblem& p = model.problem();
    for (size_t c = 0; c < chunks_; ++c) {
      // What the chunk carries besides its layers: an end, or nothing.
      ends_.push_back(model.chunkBytes(stage, {none.data(), none.data()}, c));
      double seconds = 0;
      if (stage == 0 && c == 0) seconds += p.first.seconds;
      if (stage == p.stages - 1 && c + 1 == chunks_) seconds += p.last.seconds;
      endSeconds_.push_back(seconds);
    }
  }

  /// The split with the least recompute, or false when none fits.
  bool solve(StageLoad& best) {
    best_ = kNone;
    if (capacity_ >= 0 && chunks_ == 2) {
      for (int64_t n = fewest_; n <= most_; ++n) solveTwoChunks(n);
    } else if (capacity_ >= 0) {
      visit(0, 0, 0);
    }
    if (best_ == kNone) return false;
    best = chosen_;
    return true;
  }

 private:
  /// Two chunks, n0 = `first` layers in chunk 0: the enumeration's answer for that split in
  /// O(rows log n) (stage_options.h). Chunk 1's least recompute given r0 is r1(r0) = ceil(g(r0))
  /// with g(r0) = max(0, max_j (N_j - H0_j r0) / H1_j) over the peak rows j (H_jc the bytes
  /// recomputing one layer of chunk c saves at row j, N_j the row's excess without recompute).
  /// g is convex and falls, so the total r0 + r1(r0) falls while g's step is -1 or steeper and
  /// rises after: the least total is where the step first exceeds -1, found by binary search, as
  /// are the ends of the run of r0 that reach it. Among those the slowest chunk is a convex
  /// function of r0, least near where the chunks take equally long.
  void solveTwoChunks(int64_t first) {
    const int64_t second = layers_ - first;
    // Rows that cannot shed bytes in chunk 1 and the chunk-0-alone check bound r0 from below.
    int64_t low = 0;
    for (size_t j = 0; j < rows_.size(); ++j) {
      const int64_t alone = rows_[j][0] * bytesOf(0, first, 0) - capacity_;
      if (!boundBelow(alone, rows_[j][0] * saved_, low)) return;
      if (rows_[j][1] * saved_ <= 0 &&
          !boundBelow(excess(j, first, second), rows_[j][0] * saved_, low)) {
        return;
      }
    }
    // r1(r0) <= n1: g falls, so the fitting r0 are those from the first that meets it.
    const auto fitsSecond = [&](int64_t r0) {
      return compare(excessFraction(first, second, r0), {second, 1}) <= 0;
    };
    low = firstWhere(low, first + 1, fitsSecond);
    if (low > first) return;
    // The first r0 whose next step of g exceeds -1: g(r0 + 1) + 1 > g(r0).
    const auto rising = [&](int64_t r0) {
      if (r0 >= first) return true;
      Fraction next = excessFraction(first, second, r0 + 1);
      next.num += next.den;
      return compare(next, excessFraction(first, second, r0)) > 0;
    };
    const int64_t lowest = firstWhere(low, first, rising);
    const auto total = [&](int64_t r0) { return r0 + ceilOf(excessFraction(first, second, r0)); };
    const int64_t least = total(lowest);
    if (least > best_) return;
    // The run of r0 with the least total: [from, to].
    const int64_t from = firstWhere(low, lowest, [&](int64_t r0) { return total(r0) == least; });
    const int64_t to =
        firstWhere(lowest, first + 1, [&](int64_t r0) { return total(r0) != least; }) - 1;
    // The slowest chunk, max(A + r0 t, B - r0 t), is least near r0 = (B - A) / 2t.
    load_.layers = {first, second};
    std::vector<int64_t> candidates{from, to};
    if (recomputeSeconds_ > 0) {
      const double a = static_cast<double>(first) * layerSeconds_ + endSeconds_[0];
      const double b = static_cast<double>(second) * layerSeconds_ +
                       static_cast<double>(least) * recomputeSeconds_ + endSeconds_[1];
      const double cross = std::floor((b - a) / (2 * recomputeSeconds_));
      for (double r0 : {cross, cross + 1}) {
        if (r0 > static_cast<double>(from) && r0 < static_cast<double>(to)) {
          candidates.push_back(static_cast<int64_t>(r0));
        }
      }
    }
    std::sort(candidates.begin(), candidates.end());
    for (int64_t r0 : candidates) {
      load_.recomputed = {r0, least - r0};
      const double slowest = slowestChunkSeconds();
      if (least == best_ && slowest >= slowestChunk_) continue;
      best_ = least;
      slowestChunk_ = slowest;
      chosen_ = load_;
    }
  }

  /// A non-negative fraction num / den, den > 0 (128-bit: bytes times bytes).
  struct Fraction {
    __int128 num;
    __int128 den;
  };
  static int compare(const Fraction& x, const Fraction& y) {
    const __int128 left = x.num * y.den;
    const __int128 right = y.num * x.den;
    return left < right ? -1 : (left > right ? 1 : 0);
  }
  static int64_t ceilOf(const Fraction& x) {
    return static_cast<int64_t>((x.num + x.den - 1) / x.den);
  }
  /// Row j's bytes over capacity with no recompute.
  [[nodiscard]] int64_t excess(size_t j, int64_t first, int64_t second) const {
    return rows_[j][0] * bytesOf(0, first, 0) + rows_[j][1] * bytesOf(1, second, 0) - capacity_;
  }
  /// g(r0) (solveTwoChunks), over the rows chunk 1 can shed bytes at.
  [[nodiscard]] Fraction excessFraction(int64_t first, int64_t second, int64_t r0) const {
    Fraction most{0, 1};
    for (size_t j = 0; j < rows_.size(); ++j) {
      const int64_t shed = rows_[j][1] * saved_;
      if (shed <= 0) continue;
      const Fraction row{static_cast<__int128>(excess(j, first, second)) -
                             static_cast<__int128>(rows_[j][0] * saved_) * r0,
                         shed};
      if (row.num > 0 && compare(row, most) > 0) most = row;
    }
    return most;
  }
  /// Raises `low` to the least r with over - r per <= 0; false when none does.
  static bool boundBelow(int64_t over, int64_t per, int64_t& low) {
    if (over <= 0) return true;
    if (per <= 0) return false;
    low = std::max(low, (over + per - 1) / per);
    return true;
  }
  /// The first r in [low, high) where `holds` (monotone: false then true), else high.
  template <typename Predicate>
  static int64_t firstWhere(int64_t low, int64_t high, Predicate holds) {
    while (low < high) {
      const int64_t mid = low + (high - low) / 2;
      holds(mid) ? high = mid : low = mid + 1;
    }
    return low;
  }

  void visit(size_t chunk, int64_t placed, int64_t recomputed) {
    if (chunk + 1 == chunks_) return finish(placed, recomputed);
    const auto later = static_cast<int64_t>(chunks_ - chunk - 1);
    for (int64_t n = fewest_; n <= most_; ++n) {
      const int64_t left = layers_ - placed - n;
      if (left < later * fewest_ || left > later * most_) continue;
      for (int64_t r = 0; r <= n && recomputed + r <= best_; ++r) {
        bool over = false;
        for (size_t j = 0; j < rows_.size(); ++j) {
          held_[chunk + 1][j] = held_[chunk][j] + rows_[j][chunk] * bytesOf(chunk, n, r);
          over = over || held_[chunk + 1][j] > capacity_;
        }
        if (over) continue;  // more recompute here may fit
        load_.layers[chunk] = n;
        load_.recomputed[chunk] = r;
        visit(chunk + 1, placed + n, recomputed + r);
      }
    }
  }

  /// The last chunk takes the remaining layers and the fewest recomputed that fit every row.
  void finish(int64_t placed, int64_t recomputed) {
    const size_t chunk = chunks_ - 1;
    const int64_t n = layers_ - placed;
    int64_t r = 0;
    for (size_t j = 0; j < rows_.size(); ++j) {
      const int64_t room = capacity_ - held_[chunk][j] - rows_[j][chunk] * bytesOf(chunk, n, 0);
      if (room >= 0) continue;
      const int64_t perLayer = rows_[j][chunk] * saved_;
      if (perLayer <= 0) return;
      r = std::max(r, (-room + perLayer - 1) / perLayer);
    }
    if (r > n || recomputed + r > best_) return;
    load_.layers[chunk] = n;
    load_.recomputed[chunk] = r;
    const double slowest = slowestChunkSeconds();
    if (recomputed + r == best_ && slowest >= slowestChunk_) return;
    best_ = recomputed + r;
    slowestChunk_ = slowest;
    chosen_ = load_;
  }

  [[nodiscard]] int64_t bytesOf(size_t chunk, int64_t n, int64_t r) const {
    return activation_ * n - saved_ * r + ends_[chunk];
  }

  /// The slowest chunk of load_, ends included: the tie-break among equal recompute.
  [[nodiscard]] double slowestChunkSeconds() const {
    double slowest = 0;
    for (size_t c = 0; c < chunks_; ++c) {
      slowest = std::max(slowest, static_cast<double>(load_.layers[c]) * layerSeconds_ +
                                      static_cast<double>(load_.recomputed[c]) * recomputeSeconds_ +
                                      endSeconds_[c]);
    }
    return slowest;
  }

  const std::vector<std::vector<int64_t>>& rows_;
  size_t chunks_;
  int64_t layers_;
  int64_t fewest_;  ///< floor(layers / V): a chunk's fewest layers
  int64_t most_;    ///< ceil(layers / V)
  int64_t activation_ = 0;
  int64_t saved_ = 0;
  double layerSeconds_ = 0;
  double recomputeSeconds_ = 0;
  int64_t capacity_ = 0;
  std::vector<int64_t> ends_;
  std::vector<double> endSeconds_;
  StageLoad load_;
  StageLoad chosen_;
  int64_t best_ = kNone;
  double slowestChunk_ = 0;
  /// held_[c][j]: row j's activation bytes of chunks before c.
  std::vector<std::vector<int64_t>> held_;
};

}  // namespace

StageOptions::StageOptions(const PlacementModel& model)
    : model_(model),
      total_(model.problem().layers()),
      minLayers_(static_cast<int64_t>(model.chunks())),
      positionFree_(model.chunks() > 1) {
  const PlacementProblem& p = model.problem();
  firstStack_ = p.stacks.front().layers;
  secondStack_ = p.stacks.size() > 1 ? p.stacks[1].layers : 0;
  options_.resize(static_cast<size_t>(entries(p)));
  positionFree_ ? addInterleaved() : addContiguous();
  addReach();
}

int64_t StageOptions::entries(const PlacementProblem& problem) {
  const int64_t first = problem.stacks.front().layers;
  const int64_t second = problem.stacks.size() > 1 ? problem.stacks[1].layers : 0;
  return problem.stages * (first + 1) * (second + 1);
}

size_t StageOptions::index(int64_t stage, int64_t n0, int64_t n1) const {
  const auto runs = static_cast<size_t>((firstStack_ + 1) * (secondStack_ + 1));
  return static_cast<size_t>(stage) * runs + static_cast<size_t>(n0 * (secondStack_ + 1) + n1);
}

bool StageOptions::realizable(int64_t stage, int64_t n0, int64_t n1) const {
  // Positions [from, from + n0 + n1) with s <= from and the stages after s holding one each.
  const int64_t earliest = stage;
  const int64_t end = total_ - (model_.problem().stages - 1 - stage);
  if (n0 > 0 && n1 > 0) return firstStack_ - n0 >= earliest && firstStack_ + n1 <= end;
  if (n1 == 0) return earliest + n0 <= std::min(firstStack_, end);
  return std::max(earliest, firstStack_) + n1 <= end;
}

const StageOption& StageOptions::at(int64_t stage, int64_t from, int64_t count) const {
  if (positionFree_) return options_[index(stage, count, 0)];
  const std::array<int64_t, 2> run = runOf(model_.problem(), from, count);
  return options_[index(stage, run[0], run[1])];
}

void StageOptions::addContiguous() {
  const PlacementProblem& p = model_.problem();
  for (int64_t s = 0; s < p.stages; ++s) {
    for (int64_t n0 = 0; n0 <= firstStack_; ++n0) {
      for (int64_t n1 = n0 == 0 ? 1 : 0; n1 <= secondStack_; ++n1) {
        if (!realizable(s, n0, n1)) continue;
        StageOption& option = options_[index(s, n0, n1)];
        const std::array<int64_t, 2> run{n0, n1};
        std::array<int64_t, 2> recomputed{};
        option.fits = leastRecompute(model_, s, run, recomputed);
        if (!option.fits) continue;
        const LoadView view{run.data(), recomputed.data()};
        option.seconds = model_.seconds(s, view);
        option.fill = model_.fill(option.seconds, model_.weightSeconds(s, view));
      }
    }
  }
}

void StageOptions::addInterleaved() {
  const PlacementProblem& p = model_.problem();
  for (int64_t s = 0; s < p.stages; ++s) {
    // More layers never fit where fewer do not: stop at the first count that does not.
    for (int64_t count = minLayers_; count + (p.stages - 1) * minLayers_ <= total_; ++count) {
      StageLoad load;
      ChunkSplitter splitter(model_, s, count);
      if (!splitter.solve(load)) break;
      StageOption& option = options_[index(s, count, 0)];
      option.fits = true;
      option.seconds = model_.seconds(s, load.view());
      option.fill = model_.fill(option.seconds, model_.weightSeconds(s, load.view()));
    }
  }
}

void StageOptions::addReach() {
  const auto runs = static_cast<size_t>((firstStack_ + 1) * (secondStack_ + 1));
  reach_.resize(static_cast<size_t>(model_.problem().stages));
  for (size_t s = 0; s < reach_.size(); ++s) {
    std::vector<std::pair<double, int64_t>>& reach = reach_[s];
    for (size_t i = 0; i < runs; ++i) {
      const StageOption& option = options_[s * runs + i];
      const auto n0 = static_cast<int64_t>(i) / (secondStack_ + 1);
      if (option.fits)
        reach.emplace_back(option.seconds, n0 + static_cast<int64_t>(i) % (secondStack_ + 1));
    }
    std::sort(reach.begin(), reach.end());
    for (size_t i = 1; i < reach.size(); ++i) {
      reach[i].second = std::max(reach[i].second, reach[i - 1].second);
    }
  }
}

int64_t StageOptions::mostLayers(int64_t stage, double bottleneck) const {
  const auto& reach = reach_[static_cast<size_t>(stage)];
  const auto past =
      std::upper_bound(reach.begin(), reach.end(), std::pair<double, int64_t>{bottleneck, kNone});
  return past == reach.begin() ? 0 : std::prev(past)->second;
}

StageLoad StageOptions::load(int64_t stage, int64_t from, int64_t count) const {
  StageLoad load;
  if (positionFree_) {
    ChunkSplitter(model_, stage, count).solve(load);
    return load;
  }
  const std::array<int64_t, 2> run = runOf(model_.problem(), from, count);
  std::array<int64_t, 2> recomputed{};
  leastRecompute(model_, stage, run, recomputed);
  const size_t stacks = model_.stacks();
  load.layers.assign(run.begin(), run.begin() + static_cast<std::ptrdiff_t>(stacks));
  load.recomputed.assign(recomputed.begin(),
                         recomputed.begin() + static_cast<std::ptrdiff_t>(stacks));
  return load;
}

std::vector<double> StageOptions::bottlenecks() const {
  std::vector<double> values;
  for (const StageOption& option : options_) {
    if (option.fits) values.push_back(option.seconds);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

}  // namespace autopar::search
