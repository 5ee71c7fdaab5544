#include "search/layer_level/analytic_step.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <numeric>

namespace autopar::search {

namespace {

/// One stage of a candidate: how many layers of each stack each of its chunks runs and
/// recomputes, and whether it carries an end (the embedding on its first chunk, the head on its
/// last).
class Stage {
 public:
  Stage(const BlockProfile& profile, const AnalyticCandidate& c, int64_t stage)
      : profile_(profile),
        chunks_(static_cast<size_t>(chunksOf(c.schedule, c.virtualStages))),
        first_(stage == 0),
        last_(stage == c.stages - 1) {
    layers_.reserve(profile.layers.size() * chunks_);
    recomputed_.reserve(profile.layers.size() * chunks_);
    for (size_t k = 0; k < profile.layers.size(); ++k) {
      for (size_t chunk = 0; chunk < chunks_; ++chunk) {
        const auto v = static_cast<size_t>(static_cast<int64_t>(chunk) * c.stages + stage);
        layers_.push_back(static_cast<double>(c.layers[k][v]));
        recomputed_.push_back(static_cast<double>(c.recomputed[k][v]));
      }
    }
  }

  /// The sum of `field` over the stage's layers and ends.
  template <typename Field>
  [[nodiscard]] double sum(Field field) const {
    double total = 0;
    for (size_t i = 0; i < layers_.size(); ++i) total += layers_[i] * field(layerOf(i));
    if (first_) total += field(profile_.first);
    if (last_) total += field(profile_.last);
    return total;
  }

  [[nodiscard]] double recomputeSeconds() const {
    double total = 0;
    for (size_t i = 0; i < layers_.size(); ++i) {
      total += recomputed_[i] * layerOf(i).recomputeSeconds;
    }
    return total;
  }

  /// Activations of one micro-batch per chunk (recomputed layers keep only their inputs), in
  /// `bytes`.
  void chunkActivationBytes(std::vector<double>& bytes) const {
    bytes.assign(chunks_, 0.0);
    for (size_t i = 0; i < layers_.size(); ++i) {
      const ProfiledPart& layer = layerOf(i);
      bytes[i % chunks_] +=
          (layers_[i] - recomputed_[i]) * static_cast<double>(layer.activationBytes) +
          recomputed_[i] * static_cast<double>(layer.recomputedActivationBytes);
    }
    if (first_) bytes.front() += static_cast<double>(profile_.first.activationBytes);
    if (last_) bytes.back() += static_cast<double>(profile_.last.activationBytes);
  }

  /// The weights in `state` of the recomputed layers, which ZeRO 3 gathers again in backward.
  [[nodiscard]] double recomputedWeightBytes(StateBytes ProfiledPart::*state) const {
    double total = 0;
    for (size_t i = 0; i < layers_.size(); ++i) {
      total += recomputed_[i] * static_cast<double>((layerOf(i).*state).weights);
    }
    return total;
  }

  /// The weights in `state` of all layers, which ZeRO 3 gathers for forward and again for
  /// backward.
  [[nodiscard]] double weightBytes(StateBytes ProfiledPart::*state) const {
    double total = 0;
    for (size_t i = 0; i < layers_.size(); ++i) {
      total += layers_[i] * static_cast<double>((layerOf(i).*state).weights);
    }
    return total;
  }

 private:
  /// Entry i of layers_ is stack i / chunks_, chunk i % chunks_.
  [[nodiscard]] const ProfiledPart& layerOf(size_t i) const { return profile_.layers[i / chunks_]; }

  const BlockProfile& profile_;
  size_t chunks_;
  bool first_;
  bool last_;
  std::vector<double> layers_;
  std::vector<double> recomputed_;
};

/// A replica group of a candidate: its parameters' state in a profiled part, and its replicas.
struct GroupOf {
  ReplicaGroup group;
  StateBytes ProfiledPart::*state;
  int64_t replicas;
};

std::array<GroupOf, 2> replicaGroups(const AnalyticCandidate& c) {
  return {{{ReplicaGroup::kData, &ProfiledPart::state, c.dp},
           {ReplicaGroup::kExpertData, &ProfiledPart::expertState, c.expertDp}}};
}

/// One stage's gradient traffic, over both replica groups: one all-reduce of each group's
/// gradients per step (ZeRO 1: a reduce-scatter, half of it, and the all-gather of the updated
/// weights); ZeRO 2 reduce-scatters them every micro-batch (half an all-reduce); ZeRO 3
/// also all-gathers every layer's weights for forward and again for backward, and those of the
/// recomputed layers once more for the recomputation, every micro-batch (each gather half an
/// all-reduce of their bytes), as the cost model does.
struct StageSync {
  double allReduceSeconds = 0;
  double perMicroBatchSeconds = 0;
  double weightGatherSeconds = 0;  ///< ZeRO 1: the updated weights' all-gather
  int64_t gradientBytes = 0;
};

StageSync stageSync(const Stage& stage, const AnalyticCandidate& c, const GradientSync& sync) {
  StageSync result;
  for (const GroupOf& g : replicaGroups(c)) {
    // The stage's whole `field` of the group's state, the ends' (embedding, head) included.
    auto total = [&](int64_t StateBytes::*field) {
      return static_cast<int64_t>(stage.sum(
          [&](const ProfiledPart& p) { return static_cast<double>((p.*g.state).*field); }));
    };
    const auto gradients = static_cast<int64_t>(static_cast<double>(total(&StateBytes::gradients)) *
                                                c.gradientSyncFraction);
    result.gradientBytes += gradients;
    if (g.replicas <= 1) continue;
    const double allReduce = sync(gradients, g.group);
    result.allReduceSeconds += allReduce;
    if (c.zero == 1) result.weightGatherSeconds += sync(total(&StateBytes::weights), g.group) / 2;
    if (c.zero >= 2) result.perMicroBatchSeconds += allReduce / 2;
    if (c.zero >= 3) {
      const auto weights = static_cast<int64_t>(stage.weightBytes(g.state));
      const auto recomputed = static_cast<int64_t>(stage.recomputedWeightBytes(g.state));
      result.perMicroBatchSeconds += sync(weights, g.group) + sync(recomputed, g.group) / 2;
    }
  }
  return result;
}

/// One part's state on a device under the candidate's ZeRO stage, each group over its replicas.
double shardedStateBytes(const ProfiledPart& p, const AnalyticCandidate& c) {
  double total = 0;
  for (const GroupOf& g : replicaGroups(c)) {
    total += static_cast<double>((p.*g.state).sharded(c.zero, g.replicas));
  }
  return total;
}

/// A stage's sharded state, part by part.
StateBytes stageStateBytes(const Stage& stage, const AnalyticCandidate& c) {
  StateBytes total;
  for (const GroupOf& g : replicaGroups(c)) {
    auto part = [&](int64_t StateBytes::*field) {
      return static_cast<int64_t>(stage.sum([&](const ProfiledPart& p) {
        return static_cast<double>((p.*g.state).shardedParts(c.zero, g.replicas).*field);
      }));
    };
    total += StateBytes{part(&StateBytes::weights), part(&StateBytes::gradients),
                        part(&StateBytes::optimizer)};
  }
  return total;
}

/// One part's optimizer step: ZeRO shards each group's share (by optimizer-state bytes) over its
/// replicas.
double shardedOptimizerSeconds(const ProfiledPart& p, const AnalyticCandidate& c) {
  if (c.zero < 1) return p.optimizerSeconds;
  const auto dense = static_cast<double>(p.state.optimizer);
  const auto experts = static_cast<double>(p.expertState.optimizer);
  if (dense + experts <= 0) return p.optimizerSeconds / static_cast<double>(c.dp);
  return p.optimizerSeconds *
         (dense / static_cast<double>(c.dp) + experts / static_cast<double>(c.expertDp)) /
         (dense + experts);
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

int64_t StateBytes::sharded(int zero, int64_t dp) const { return shardedParts(zero, dp).total(); }

StateBytes StateBytes::shardedParts(int zero, int64_t dp) const {
  const auto shard = [dp](int64_t bytes) { return (bytes + dp - 1) / dp; };
  return {zero >= 3 ? shard(weights) : weights, zero >= 2 ? shard(gradients) : gradients,
          zero >= 1 ? shard(optimizer) : optimizer};
}

StateBytes& StateBytes::operator+=(const StateBytes& other) {
  weights += other.weights;
  gradients += other.gradients;
  optimizer += other.optimizer;
  return *this;
}

int64_t AnalyticEstimate::peak() const {
  return peakBytes.empty() ? 0 : *std::max_element(peakBytes.begin(), peakBytes.end());
}

StackCounts evenLayers(const std::vector<int64_t>& stacks, int64_t stages, int64_t virtualStages) {
  const int64_t total = stages * virtualStages;
  StackCounts counts(stacks.size(), std::vector<int64_t>(static_cast<size_t>(total), 0));
  const int64_t layers = std::accumulate(stacks.begin(), stacks.end(), int64_t{0});
  for (int64_t i = 0; i < layers; ++i) {
    ++counts[stackOf(stacks, i)][static_cast<size_t>(i * total / layers)];
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

Expected<PlacementProblem> placementProblemOf(const BlockProfile& profile,
                                              const AnalyticCandidate& shape,
                                              const std::vector<int64_t>& stacks,
                                              int64_t deviceBytes, double transientScale) {
  if (shape.zero >= 2) {
    return Error{fmt::format(
        "layer placement models ZeRO 0 and 1; ZeRO {} adds per-micro-batch gradient traffic "
        "that depends on each stage's bytes",
        shape.zero)};
  }
  const auto sharded = [&](const ProfiledPart& part) {
    return static_cast<int64_t>(shardedStateBytes(part, shape));
  };
  const auto transient = [&](int64_t bytes) {
    return static_cast<int64_t>(transientScale * static_cast<double>(bytes));
  };
  PlacementProblem problem;
  for (size_t k = 0; k < stacks.size(); ++k) {
    const ProfiledPart& l = profile.layers[k];
    problem.stacks.push_back({stacks[k],
                              {l.forwardSeconds, l.backwardSeconds, l.recomputeSeconds, sharded(l),
                               transient(l.activationBytes), transient(l.recomputedActivationBytes),
                               l.weightGradientSeconds}});
  }
  problem.stages = shape.stages;
  problem.virtualStages = chunksOf(shape.schedule, shape.virtualStages);
  problem.microBatches = shape.microBatches;
  problem.schedule = shape.schedule;
  const auto end = [&](const ProfiledPart& part) {
    return StageExtra{part.forwardSeconds + part.backwardSeconds, sharded(part),
                      transient(part.activationBytes), part.weightGradientSeconds};
  };
  problem.first = end(profile.first);
  problem.last = end(profile.last);
  // The kept outputs do not depend on the layers a stage holds: the placement gets the limit
  // less the most any stage keeps.
  const int64_t kept = shape.stages < 2
                           ? 0
                           : shape.microBatches * chunksOf(shape.schedule, shape.virtualStages) *
                                 std::max(profile.keptBoundaryBytes, profile.keptHeadBytes);
  problem.memoryLimitBytes = deviceBytes - transient(profile.bufferBytes + kept);
  problem.sendSeconds = profile.sendSeconds;
  return problem;
}

namespace {

/// The stage's tail: its gradient reduction (an all-reduce without ZeRO or where ZeRO 1
/// all-reduces; with ZeRO a reduce-scatter, half of it, on top of ZeRO 2's and 3's
/// per-micro-batch ones), exposed as one
/// bucket after the backward, or in buckets that overlap the last micro-batch's backward but for
/// the last one; then its optimizer step and ZeRO 1's gather of the updated weights, which may run
/// under a forward.
double tailSeconds(const Stage& stage, const StageSync& sync, double forwardSeconds,
                   double backwardSeconds, const AnalyticCandidate& c) {
  double exposed = c.overlapParameterGather
                       ? std::max(sync.weightGatherSeconds - forwardSeconds, 0.0)
                       : sync.weightGatherSeconds;
  if (sync.allReduceSeconds > 0) {
    const bool halved = c.zero >= 1 && !(c.zero == 1 && c.gradientsAllReduced);
    const double whole = halved ? sync.allReduceSeconds / 2 : sync.allReduceSeconds;
    if (c.gradientBucketBytes <= 0 || c.gradientBucketBytes >= sync.gradientBytes) {
      exposed += whole;
    } else {
      const double lastBucket = whole * static_cast<double>(c.gradientBucketBytes) /
                                static_cast<double>(sync.gradientBytes);
      exposed += std::max(whole - backwardSeconds, lastBucket);
    }
  }
  return exposed + stage.sum([&](const ProfiledPart& p) { return shardedOptimizerSeconds(p, c); });
}

/// What stage `s` keeps of its chunks' outputs by the step's last forward, when the steady state
/// still holds its peak in flight (exact for 1F1B): every micro-batch's output of each chunk.
int64_t keptOutputBytes(const BlockProfile& profile, const AnalyticCandidate& c, int64_t s) {
  if (c.stages < 2) return 0;
  const int64_t chunks = chunksOf(c.schedule, c.virtualStages);
  int64_t bytes = 0;
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const bool last = chunk * c.stages + s == chunks * c.stages - 1;
    bytes += last ? profile.keptHeadBytes : profile.keptBoundaryBytes;
  }
  return bytes * c.microBatches;
}

}  // namespace

AnalyticEstimate estimateAnalytic(const BlockProfile& profile, const AnalyticCandidate& c,
                                  const GradientSync& gradientSync) {
  AnalyticEstimate estimate;
  estimate.peakBytes.resize(static_cast<size_t>(c.stages));
  estimate.stateBytes.resize(static_cast<size_t>(c.stages));
  PipelineClock clock(c.schedule, chunksOf(c.schedule, c.virtualStages), c.microBatches, c.stages,
                      profile.sendSeconds);
  double tail = 0;
  double weights = 0;  // ZeRO 3 holds two layers' gathered weights: one in use, one prefetched
  for (const ProfiledPart& layer : profile.layers) {
    weights =
        std::max(weights, 2 * static_cast<double>(layer.state.weights + layer.expertState.weights));
  }
  const double buffers = static_cast<double>(profile.bufferBytes) + (c.zero >= 3 ? weights : 0);
  std::vector<double> chunkBytes;
  for (int64_t s = 0; s < c.stages; ++s) {
    const Stage stage(profile, c, s);
    const StageSync sync = stageSync(stage, c, gradientSync);
    const double backward = stage.sum([](const ProfiledPart& p) { return p.backwardSeconds; }) +
                            stage.recomputeSeconds();
    const double forward = stage.sum([](const ProfiledPart& p) { return p.forwardSeconds; });
    const double seconds = forward + backward + sync.perMicroBatchSeconds;
    clock.addStage(seconds,
                   stage.sum([](const ProfiledPart& p) { return p.weightGradientSeconds; }));
    // Memory: sharded state, buffers and the activations in flight.
    const double state =
        stage.sum([&](const ProfiledPart& p) { return shardedStateBytes(p, c); }) + buffers;
    stage.chunkActivationBytes(chunkBytes);
    estimate.stateBytes[static_cast<size_t>(s)] = stageStateBytes(stage, c);
    estimate.peakBytes[static_cast<size_t>(s)] =
        static_cast<int64_t>(state + peakActivationBytes(c.schedule, c.stages, c.virtualStages,
                                                         c.microBatches, s, chunkBytes.data())) +
        keptOutputBytes(profile, c, s);
    tail = std::max(tail, tailSeconds(stage, sync, forward, backward, c));
  }
  estimate.pipelineSeconds = clock.seconds();
  estimate.tailSeconds = tail;
  estimate.stepSeconds = estimate.pipelineSeconds + tail;
  return estimate;
}

}  // namespace autopar::search
