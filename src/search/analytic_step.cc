#include "search/analytic_step.h"

#include <algorithm>
#include <numeric>

namespace autopar::search {

namespace {

/// PyTorch DDP's and Megatron-LM's default bucket: the last one cannot overlap the backward.
constexpr int64_t kBucketBytes = int64_t{25} << 20;

/// One stage of a candidate: how many layers of each stack it runs and recomputes, and whether
/// it carries an end.
class Stage {
 public:
  Stage(const BlockProfile& profile, const AnalyticCandidate& c, int64_t stage)
      : profile_(profile), first_(stage == 0), last_(stage == c.stages - 1) {
    for (size_t k = 0; k < profile.layers.size(); ++k) {
      layers_.push_back(static_cast<double>(c.layers[k][static_cast<size_t>(stage)]));
      recomputed_.push_back(static_cast<double>(c.recomputed[k][static_cast<size_t>(stage)]));
    }
  }

  /// The sum of `field` over the stage's layers and ends.
  template <typename Field>
  [[nodiscard]] double sum(Field field) const {
    double total = 0;
    for (size_t k = 0; k < layers_.size(); ++k) total += layers_[k] * field(profile_.layers[k]);
    if (first_) total += field(profile_.first);
    if (last_) total += field(profile_.last);
    return total;
  }

  [[nodiscard]] double recomputeSeconds() const {
    double total = 0;
    for (size_t k = 0; k < layers_.size(); ++k) {
      total += recomputed_[k] * profile_.layers[k].recomputeSeconds;
    }
    return total;
  }

  /// Activations of one micro-batch: recomputed layers keep only their inputs.
  [[nodiscard]] double activationBytes() const {
    double total = 0;
    for (size_t k = 0; k < layers_.size(); ++k) {
      const ProfiledPart& layer = profile_.layers[k];
      total += (layers_[k] - recomputed_[k]) * static_cast<double>(layer.activationBytes) +
               recomputed_[k] * static_cast<double>(layer.recomputedActivationBytes);
    }
    if (first_) total += static_cast<double>(profile_.first.activationBytes);
    if (last_) total += static_cast<double>(profile_.last.activationBytes);
    return total;
  }

  /// The weights of the recomputed layers, which ZeRO 3 gathers again in backward.
  [[nodiscard]] double recomputedWeightBytes() const {
    double total = 0;
    for (size_t k = 0; k < layers_.size(); ++k) {
      total += recomputed_[k] * static_cast<double>(profile_.layers[k].state.weights);
    }
    return total;
  }

  /// The weights of all layers, which ZeRO 3 gathers for forward and again for backward.
  [[nodiscard]] double weightBytes() const {
    double total = 0;
    for (size_t k = 0; k < layers_.size(); ++k) {
      total += layers_[k] * static_cast<double>(profile_.layers[k].state.weights);
    }
    return total;
  }

 private:
  const BlockProfile& profile_;
  bool first_;
  bool last_;
  std::vector<double> layers_;
  std::vector<double> recomputed_;
};

/// Chunk-micro-batches the stage holds at its peak, in units of its whole layer set.
double inFlight(const AnalyticCandidate& c, int64_t stage) {
  const int64_t p = c.stages;
  if (c.schedule == PipelineSchedule::kZeroBubbleH1) {
    return static_cast<double>(std::min(p, c.microBatches));
  }
  if (c.schedule != PipelineSchedule::kInterleaved || c.virtualStages <= 1) {
    return static_cast<double>(std::min(p - stage, c.microBatches));
  }
  const int64_t v = c.virtualStages;
  const int64_t chunks = std::min(2 * (p - stage - 1) + (v - 1) * p + 1, c.microBatches * v);
  return static_cast<double>(chunks) / static_cast<double>(v);
}

/// Which stack position `i` of the concatenated stacks belongs to.
size_t stackOf(const std::vector<int64_t>& stacks, int64_t i) {
  size_t k = 0;
  for (int64_t start = 0; k + 1 < stacks.size() && i >= start + stacks[k]; ++k) {
    start += stacks[k];
  }
  return k;
}

}  // namespace

int64_t StateBytes::sharded(int zero, int64_t dp) const {
  const auto shard = [dp](int64_t bytes) { return (bytes + dp - 1) / dp; };
  return (zero >= 3 ? shard(weights) : weights) + (zero >= 2 ? shard(gradients) : gradients) +
         (zero >= 1 ? shard(optimizer) : optimizer);
}

int64_t AnalyticEstimate::peak() const {
  return peakBytes.empty() ? 0 : *std::max_element(peakBytes.begin(), peakBytes.end());
}

StackCounts evenLayers(const std::vector<int64_t>& stacks, int64_t stages, int64_t virtualStages) {
  StackCounts counts(stacks.size(), std::vector<int64_t>(static_cast<size_t>(stages), 0));
  const int64_t layers = std::accumulate(stacks.begin(), stacks.end(), int64_t{0});
  const int64_t total = stages * virtualStages;
  for (int64_t i = 0; i < layers; ++i) {
    ++counts[stackOf(stacks, i)][static_cast<size_t>(i * total / layers % stages)];
  }
  return counts;
}

StackCounts balancedLayers(const std::vector<int64_t>& stacks, const BlockProfile& profile,
                           int64_t stages) {
  const auto seconds = [](const ProfiledPart& p) { return p.forwardSeconds + p.backwardSeconds; };
  const int64_t layers = std::accumulate(stacks.begin(), stacks.end(), int64_t{0});
  double total = seconds(profile.first) + seconds(profile.last);
  for (size_t k = 0; k < stacks.size(); ++k) {
    total += static_cast<double>(stacks[k]) * seconds(profile.layers[k]);
  }
  StackCounts counts(stacks.size(), std::vector<int64_t>(static_cast<size_t>(stages), 0));
  // Stage s ends where the running time first reaches (s + 1) / P of the total, keeping at least
  // one layer for itself and for every later stage.
  double done = seconds(profile.first);
  int64_t stage = 0;
  int64_t onStage = 0;
  for (int64_t i = 0; i < layers; ++i) {
    const size_t k = stackOf(stacks, i);
    const int64_t left = layers - i;
    const bool mustMove = onStage > 0 && stage < stages - 1 && left <= stages - stage - 1;
    const bool full = onStage > 0 && stage < stages - 1 &&
                      done + seconds(profile.layers[k]) / 2 >
                          total * static_cast<double>(stage + 1) / static_cast<double>(stages);
    if (mustMove || full) {
      ++stage;
      onStage = 0;
    }
    ++counts[k][static_cast<size_t>(stage)];
    ++onStage;
    done += seconds(profile.layers[k]);
  }
  return counts;
}

AnalyticEstimate estimateAnalytic(const BlockProfile& profile, const AnalyticCandidate& c,
                                  const GradientSync& gradientSync) {
  AnalyticEstimate estimate;
  estimate.peakBytes.resize(static_cast<size_t>(c.stages));
  double total = 0;
  double slowest = 0;
  double slowestWeight = 0;
  double weightTotal = 0;
  double tail = 0;
  double weights = 0;  // ZeRO 3 holds two layers' gathered weights: one in use, one prefetched
  for (const ProfiledPart& layer : profile.layers) {
    weights = std::max(weights, 2 * static_cast<double>(layer.state.weights));
  }
  const double buffers = static_cast<double>(profile.bufferBytes) + (c.zero >= 3 ? weights : 0);
  for (int64_t s = 0; s < c.stages; ++s) {
    const Stage stage(profile, c, s);
    // One data-parallel all-reduce of the stage's gradients; ZeRO 2 reduce-scatters them every
    // micro-batch (half an all-reduce). ZeRO 3 all-gathers every layer's weights for forward and
    // again for backward, and those of the recomputed layers once more for the recomputation,
    // every micro-batch (each half an all-reduce of their bytes), as the cost model does.
    const auto gradients = static_cast<int64_t>(
        stage.sum([](const ProfiledPart& p) { return static_cast<double>(p.state.gradients); }));
    const double allReduce = c.dp > 1 ? gradientSync(gradients) : 0.0;
    double perMicroBatch = c.zero >= 2 ? allReduce / 2 : 0.0;
    if (c.zero >= 3 && c.dp > 1) {
      perMicroBatch += gradientSync(static_cast<int64_t>(stage.weightBytes())) +
                       gradientSync(static_cast<int64_t>(stage.recomputedWeightBytes())) / 2;
    }
    const double backward = stage.sum([](const ProfiledPart& p) { return p.backwardSeconds; }) +
                            stage.recomputeSeconds();
    const double seconds = stage.sum([](const ProfiledPart& p) { return p.forwardSeconds; }) +
                           backward + perMicroBatch;
    const double weight = stage.sum([](const ProfiledPart& p) { return p.weightGradientSeconds; });
    total += seconds;
    weightTotal += weight;
    if (seconds > slowest) {
      slowest = seconds;
      slowestWeight = weight;
    }
    // Memory: sharded state, buffers and the activations in flight.
    const double state = stage.sum([&](const ProfiledPart& p) {
      return static_cast<double>(p.state.sharded(c.zero, c.dp));
    }) + buffers;
    estimate.peakBytes[static_cast<size_t>(s)] =
        static_cast<int64_t>(state + inFlight(c, s) * stage.activationBytes());
    // The tail: what is left of the gradient reduction (all of it without ZeRO 2; the weights'
    // all-gather with it) overlaps the last micro-batch's backward but for its last bucket; then
    // the optimizer step.
    double sync = 0;
    if (allReduce > 0) {
      const double whole = c.zero >= 2 ? allReduce / 2 : allReduce;
      const double lastBucket = whole * static_cast<double>(std::min(gradients, kBucketBytes)) /
                                static_cast<double>(std::max<int64_t>(gradients, 1));
      sync = std::max(whole - backward, lastBucket);
    }
    double optimizer = stage.sum([](const ProfiledPart& p) { return p.optimizerSeconds; });
    if (c.zero >= 1) optimizer /= static_cast<double>(c.dp);
    tail = std::max(tail, sync + optimizer);
  }
  const auto m = static_cast<double>(c.microBatches);
  const double fill = static_cast<double>(c.stages - 1);
  const double v = c.schedule == PipelineSchedule::kInterleaved
                       ? static_cast<double>(std::max<int64_t>(c.virtualStages, 1))
                       : 1.0;
  double fillDrain = (total - slowest) / v;
  if (c.schedule == PipelineSchedule::kZeroBubbleH1) {
    fillDrain = std::max(fillDrain - 2 * (weightTotal - slowestWeight), 0.0);
  }
  estimate.pipelineSeconds = m * slowest + fillDrain + 2 * fill * profile.sendSeconds;
  estimate.tailSeconds = tail;
  estimate.stepSeconds = estimate.pipelineSeconds + tail;
  return estimate;
}

}  // namespace autopar::search
