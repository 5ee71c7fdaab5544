#pragma once
/// \file
/// Block profiles for the hybrid search's closed-form inner loop (search/analytic_step.h): one
/// layer's and the two ends' costs under a (TP, SP, micro-batch size, recompute) setting,
/// measured by running the full cost model and pipeline simulator on the model cut to 2 and 4
/// layers over two stages, with and without full recompute. This is seed 003's black-box block
/// sampling done on the analytic model: 4 layers minus 2 is one layer per stage. Probes are
/// cached, so a search over thousands of candidates runs a few dozen of them.
///
/// The probes run with DP 1 and no ZeRO; the closed form shards the state for each candidate.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cli/megatron_estimate.h"
#include "search/analytic_step.h"
#include "search/layer_placement.h"
#include "util/expected.h"

namespace autopar::cli {

/// One pipeline stage's figures from a probe, for one micro-batch.
struct ProbeStage {
  double forwardSeconds = 0;
  double backwardSeconds = 0;  ///< recompute included
  double optimizerSeconds = 0;
  double sendSeconds = 0;
  search::StateBytes state;
  int64_t activationBytes = 0;
  int64_t bufferBytes = 0;
};

class BlockProfiler {
 public:
  /// `base` gives the model, cluster, sequence, precision and bandwidth; `transformer` the
  /// model's dimensions.
  BlockProfiler(MegatronConfig base, frontend::TransformerConfig transformer);

  /// `recompute` is none or selective; full recompute is a per-layer choice in the profile.
  Expected<search::BlockProfile> profile(int64_t tp, bool sequenceParallel, int64_t mbs,
                                         const std::string& recompute);

  /// The profile of a configuration's (TP, SP, MBS, recompute) setting; full recompute reads
  /// the no-recompute profile.
  Expected<search::BlockProfile> profileOf(const MegatronConfig& config);

  [[nodiscard]] int probes() const { return static_cast<int>(probes_.size()); }
  [[nodiscard]] int64_t deviceBytes() const { return deviceBytes_; }
  [[nodiscard]] const frontend::TransformerConfig& transformer() const { return transformer_; }

 private:
  using ProbeKey = std::tuple<int64_t, bool, int64_t, std::string, int64_t>;
  using ProfileKey = std::tuple<int64_t, bool, int64_t, std::string>;
  Expected<std::vector<ProbeStage>> probe(const ProbeKey& key);

  MegatronConfig base_;
  frontend::TransformerConfig transformer_;
  int64_t deviceBytes_ = 0;
  std::map<ProbeKey, std::vector<ProbeStage>> probes_;
  std::map<ProfileKey, search::BlockProfile> profiles_;
};

/// The closed-form estimate (search/analytic_step.h) of a configuration on `cluster` (the search's
/// whole cluster, or the configuration's own): its block profile, layers split evenly, gradients
/// all-reduced over its DP group (ranks TP apart, Megatron-LM's order).
Expected<search::AnalyticEstimate> closedFormEstimate(const MegatronConfig& config,
                                                      BlockProfiler& profiler,
                                                      const cluster::Cluster& cluster);

/// The placement problem of a configuration (PP > 1, no interleaving) from its profile: the
/// state sharded by its ZeRO stage, the buffers off the device's memory.
search::PlacementProblem placementProblem(const search::BlockProfile& profile,
                                          const MegatronConfig& config, int64_t layers,
                                          int64_t deviceBytes);

struct PlacedEstimate {
  MegatronConfig config;  ///< with the placement's stages and recompute blocks
  ConfigEstimate estimate;
  search::Placement placement;
};

/// Non-uniform layer placement with per-stage recompute (search/layer_placement.h) for a
/// configuration with PP > 1 and no interleaving, evaluated again on the whole model; nullopt
/// when placement does not apply or nothing fits its model.
Expected<std::optional<PlacedEstimate>> placeConfiguration(const MegatronConfig& config,
                                                           BlockProfiler& profiler);

}  // namespace autopar::cli
