#include "search/analytic_step.h"

#include <algorithm>

namespace autopar::search {

namespace {

/// PyTorch DDP's and Megatron-LM's default bucket: the last one cannot overlap the backward.
constexpr int64_t kBucketBytes = int64_t{25} << 20;

/// A stage's parts: how many layers it runs, and whether it carries an end.
struct StageParts {
  double layers = 0;
  double recomputed = 0;
  bool first = false;
  bool last = false;
};

template <typename Field>
double sumOf(const BlockProfile& p, const StageParts& s, Field field) {
  double total = s.layers * field(p.layer);
  if (s.first) total += field(p.first);
  if (s.last) total += field(p.last);
  return total;
}

/// Chunk-micro-batches the stage holds at its peak, in units of its whole layer set.
double inFlight(const AnalyticCandidate& c, int64_t stage) {
  const int64_t p = c.stages;
  if (c.schedule != PipelineSchedule::kInterleaved || c.virtualStages <= 1) {
    return static_cast<double>(std::min(p - stage, c.microBatches));
  }
  const int64_t v = c.virtualStages;
  const int64_t chunks = std::min(2 * (p - stage - 1) + (v - 1) * p + 1, c.microBatches * v);
  return static_cast<double>(chunks) / static_cast<double>(v);
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

std::vector<int64_t> evenLayers(int64_t layers, int64_t stages, int64_t virtualStages) {
  std::vector<int64_t> counts(static_cast<size_t>(stages), 0);
  const int64_t total = stages * virtualStages;
  for (int64_t i = 0; i < layers; ++i) ++counts[static_cast<size_t>(i * total / layers % stages)];
  return counts;
}

AnalyticEstimate estimateAnalytic(const BlockProfile& profile, const AnalyticCandidate& c,
                                  const GradientSync& gradientSync) {
  AnalyticEstimate estimate;
  estimate.peakBytes.resize(static_cast<size_t>(c.stages));
  double total = 0;
  double slowest = 0;
  double tail = 0;
  const int64_t buffers =
      profile.bufferBytes + (c.zero >= 3 ? 2 * profile.layer.state.weights : int64_t{0});
  for (int64_t s = 0; s < c.stages; ++s) {
    const auto i = static_cast<size_t>(s);
    const StageParts parts{static_cast<double>(c.layers[i]), static_cast<double>(c.recomputed[i]),
                           s == 0, s == c.stages - 1};
    // One data-parallel all-reduce of the stage's gradients; ZeRO 2 reduce-scatters them every
    // micro-batch (half an all-reduce), ZeRO 3 also gathers the weights for forward and backward.
    const auto gradients = static_cast<int64_t>(sumOf(profile, parts, [](const ProfiledPart& p) {
      return static_cast<double>(p.state.gradients);
    }));
    const double allReduce = c.dp > 1 ? gradientSync(gradients) : 0.0;
    const double perMicroBatch = allReduce * (c.zero >= 3 ? 1.5 : c.zero == 2 ? 0.5 : 0.0);
    const double backward =
        sumOf(profile, parts, [](const ProfiledPart& p) { return p.backwardSeconds; }) +
        parts.recomputed * profile.layer.recomputeSeconds;
    const double seconds =
        sumOf(profile, parts, [](const ProfiledPart& p) { return p.forwardSeconds; }) + backward +
        perMicroBatch;
    total += seconds;
    slowest = std::max(slowest, seconds);
    // Memory: sharded state (ZeRO 3 keeps the gathered weights of layers it does not recompute
    // until their backward), buffers and the activations in flight.
    double state = sumOf(profile, parts,
                         [&](const ProfiledPart& p) {
                           return static_cast<double>(p.state.sharded(c.zero, c.dp));
                         }) +
                   static_cast<double>(buffers);
    if (c.zero >= 3) {
      state += (parts.layers - parts.recomputed) * static_cast<double>(profile.layer.state.weights);
    }
    const double kept = parts.layers - parts.recomputed;
    const double activations =
        kept * static_cast<double>(profile.layer.activationBytes) +
        parts.recomputed * static_cast<double>(profile.layer.recomputedActivationBytes) +
        (parts.first ? static_cast<double>(profile.first.activationBytes) : 0.0) +
        (parts.last ? static_cast<double>(profile.last.activationBytes) : 0.0);
    estimate.peakBytes[i] = static_cast<int64_t>(state + inFlight(c, s) * activations);
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
    double optimizer =
        sumOf(profile, parts, [](const ProfiledPart& p) { return p.optimizerSeconds; });
    if (c.zero >= 1) optimizer /= static_cast<double>(c.dp);
    tail = std::max(tail, sync + optimizer);
  }
  const auto m = static_cast<double>(c.microBatches);
  const double fill = static_cast<double>(c.stages - 1);
  const double v = c.schedule == PipelineSchedule::kInterleaved
                       ? static_cast<double>(std::max<int64_t>(c.virtualStages, 1))
                       : 1.0;
  const double pipeline = m * slowest + (total - slowest) / v + 2 * fill * profile.sendSeconds;
  estimate.pipelineSeconds = pipeline;
  estimate.tailSeconds = tail;
  estimate.stepSeconds = pipeline + tail;
  return estimate;
}

}  // namespace autopar::search
