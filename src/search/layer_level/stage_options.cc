#include "search/layer_level/stage_options.h"

#include <algorithm>
#include <array>
#include <limits>

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
    if (capacity_ >= 0) visit(0, 0, 0);
    if (best_ == kNone) return false;
    best = chosen_;
    return true;
  }

 private:
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
  const int64_t stages = model.problem().stages;
  const auto width = static_cast<size_t>(total_ + 1);
  options_.resize(static_cast<size_t>(stages) * (positionFree_ ? 1 : width) * width);
  positionFree_ ? addInterleaved() : addContiguous();
}

size_t StageOptions::index(int64_t stage, int64_t from, int64_t count) const {
  const auto width = static_cast<size_t>(total_ + 1);
  const size_t row = positionFree_ ? static_cast<size_t>(stage)
                                   : static_cast<size_t>(stage) * width + static_cast<size_t>(from);
  return row * width + static_cast<size_t>(count);
}

const StageOption& StageOptions::at(int64_t stage, int64_t from, int64_t count) const {
  return options_[index(stage, from, count)];
}

void StageOptions::addContiguous() {
  const PlacementProblem& p = model_.problem();
  for (int64_t s = 0; s < p.stages; ++s) {
    // Earlier stages hold at least one layer each, later ones too.
    for (int64_t from = s; from + (p.stages - s) <= total_; ++from) {
      for (int64_t count = 1; from + count + (p.stages - 1 - s) <= total_; ++count) {
        StageOption& option = options_[index(s, from, count)];
        const std::array<int64_t, 2> run = runOf(p, from, count);
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
      StageOption& option = options_[index(s, 0, count)];
      option.fits = true;
      option.seconds = model_.seconds(s, load.view());
      option.fill = model_.fill(option.seconds, model_.weightSeconds(s, load.view()));
    }
  }
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
