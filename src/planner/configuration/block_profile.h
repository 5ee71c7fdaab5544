#pragma once
/// \file
/// Block profiles for the hybrid search's closed-form inner loop
/// (search/layer_level/analytic_step.h): one layer's cost for each stack (the vision tower's, the
/// LLM's) and the two ends' costs under a (TP, CP, SP, micro-batch size, recompute) setting,
/// measured by running the full cost model and pipeline simulator on two small versions of the
/// model over two stages, with and without full recompute. This is seed 003's black-box block
/// sampling done on the analytic model:
///   small: stage 0 = [1 ViT layer,] 1 LLM layer;   stage 1 = 1 LLM layer
///   large: stage 0 = [2 ViT layers,] 2 LLM layers; stage 1 = 2 LLM layers
/// so stage 1's difference is one LLM layer, stage 0's is one of each, and what is left of the
/// small probe's stages is the first stage's ends (embedding, patch embedding, merger) and the
/// last's (head). Probes are cached, so a search over thousands of candidates runs a few dozen.
///
/// The probes run with DP 1 (DP = EP with expert parallelism, so that the experts split over EP
/// as they do in the candidates) and no ZeRO; the closed form shards the state for each candidate
/// over its DP x CP replicas (the parameters' replicas, which the cost model's optimizer
/// parallelism and Megatron-LM's distributed optimizer both shard over), the experts' state over
/// DP x CP / EP.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "planner/configuration/configuration_estimate.h"
#include "planner/configuration/profile_table.h"
#include "search/layer_level/analytic_step.h"
#include "search/layer_level/layer_placement.h"
#include "util/expected.h"

namespace autopar::planner {

/// One pipeline stage's figures from a probe, for one micro-batch.
struct ProbeStage {
  double forwardSeconds = 0;
  double backwardSeconds = 0;  ///< recompute included
  double optimizerSeconds = 0;
  double sendSeconds = 0;
  search::StateBytes state;        ///< replicated over the data-parallel ranks
  search::StateBytes expertState;  ///< split over expert parallelism
  int64_t activationBytes = 0;
  int64_t bufferBytes = 0;  ///< transient: communication buffers and the backward's workspace
  /// One micro-batch's output the pipeline runtime keeps until the step ends (cost::StageCost::
  /// keptOutputBytes): the boundary activation, or on the last stage the logits.
  int64_t keptOutputBytes = 0;
};

class BlockProfiler {
 public:
  /// `base` gives the model, cluster, sequence, precision and bandwidth; `transformer` the
  /// model's dimensions; `measured`, when given, replaces the probes' times and activations for
  /// the settings it has.
  BlockProfiler(MegatronConfig base, frontend::TransformerConfig transformer,
                std::optional<ProfileTable> measured = std::nullopt);

  Expected<search::BlockProfile> profile(const BlockSetting& setting);

  /// The profile of a configuration's (TP, CP, EP, SP, MBS, recompute) setting; full recompute
  /// reads the no-recompute profile.
  Expected<search::BlockProfile> profileOf(const MegatronConfig& config);

  [[nodiscard]] int probes() const { return static_cast<int>(probes_.size()); }
  /// Settings profiled so far, and how many of them the measured table had.
  [[nodiscard]] int settings() const { return static_cast<int>(profiles_.size()); }
  [[nodiscard]] int measuredSettings() const { return measuredSettings_; }
  [[nodiscard]] bool hasTable() const { return measured_.has_value(); }
  [[nodiscard]] int64_t deviceBytes() const { return deviceBytes_; }
  [[nodiscard]] const frontend::TransformerConfig& transformer() const { return transformer_; }
  /// Layers per stack, in model order: [vision tower,] LLM.
  [[nodiscard]] std::vector<int64_t> stacks() const;

 private:
  /// The setting and the layers per stack and stage: 1 or 2.
  using ProbeKey = std::pair<BlockSetting, int64_t>;
  Expected<std::vector<ProbeStage>> probe(const ProbeKey& key);

  /// Puts the table's measurements for `setting`, if it has them, into `profile`.
  void applyMeasured(const BlockSetting& setting, search::BlockProfile& profile);

  MegatronConfig base_;
  frontend::TransformerConfig transformer_;
  std::optional<ProfileTable> measured_;
  int measuredSettings_ = 0;
  int64_t deviceBytes_ = 0;
  std::map<ProbeKey, std::vector<ProbeStage>> probes_;
  std::map<BlockSetting, search::BlockProfile> profiles_;
};

/// Writes a placement (per stage, or per virtual stage when it has more entries than --pp) as the
/// configuration's block stages ("vit.layer.<i>=S", "llm.layer.<i>=S", the embedding on the first
/// stage and the head on the last), their chunks when interleaved ("llm.layer.<i>=C": virtual
/// stage v runs on stage v mod P as chunk v / P) and recomputed blocks (the first layers of each
/// stack on each stage or virtual stage).
void applyPlacement(const search::StackCounts& layers, const search::StackCounts& recomputed,
                    MegatronConfig& config);

/// The layers the screen gives each stage: split evenly for one stack (as the full model does
/// by default), by time for a vision tower and an LLM (search/layer_level/analytic_step.h).
search::StackCounts screenLayers(const MegatronConfig& config, const search::BlockProfile& profile,
                                 const std::vector<int64_t>& stacks);

/// The closed-form estimate (search/layer_level/analytic_step.h) of a configuration on `cluster`
/// (the search's whole cluster, or the configuration's own): its block profile, its layers placed
/// as `layers` says (empty: screenLayers) and recomputed as `recomputed` says (empty: every layer
/// under
/// --recompute full, else none), gradients all-reduced over its DP x CP group (ranks TP apart,
/// Megatron-LM's tp-cp-ep-dp-pp order) and ZeRO sharding over the same group; the experts'
/// gradients over their DP x CP / EP replicas (ranks TP x CP x EP apart in DP).
Expected<search::AnalyticEstimate> closedFormEstimate(const MegatronConfig& config,
                                                      BlockProfiler& profiler,
                                                      const cluster::Cluster& cluster,
                                                      search::StackCounts layers = {},
                                                      search::StackCounts recomputed = {});

/// A configuration's shape for the closed form: stages, chunks, micro-batches, replicas, ZeRO
/// stage and schedule (no layers).
search::AnalyticCandidate candidateOf(const MegatronConfig& config);

struct PlacedEstimate {
  MegatronConfig config;  ///< with the placement's stages and recompute blocks
  ConfigEstimate estimate;
  search::Placement placement;
};

/// Non-uniform layer placement with per-stage recompute (search/layer_level/layer_placement.h) for
/// a configuration with PP > 1 (per chunk when interleaved), on the closed form's model of its
/// schedule; nullopt when placement does not apply (PP 1, or full recompute everywhere); the
/// solver's error when nothing fits its model or it cannot place the stacks.
Expected<std::optional<search::Placement>> placeOnClosedForm(const MegatronConfig& config,
                                                             BlockProfiler& profiler);

/// The configuration with `placement` applied, evaluated on the whole model.
Expected<PlacedEstimate> evaluatePlaced(const MegatronConfig& config, search::Placement placement);

/// placeOnClosedForm, then the placed configuration evaluated on the whole model.
Expected<std::optional<PlacedEstimate>> placeConfiguration(const MegatronConfig& config,
                                                           BlockProfiler& profiler);

}  // namespace autopar::planner
