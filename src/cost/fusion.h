#pragma once
/// \file
/// Communication fusion (seed 004's set_comm_fusion) and the overlap of gradient synchronisation
/// with the backward pass.
///
/// Every parameter's gradient synchronisation (all-reduce, or reduce-scatter under optimizer
/// parallel) and every optimizer-parallel all-gather is one collective. Parameters with the same
/// fusion id form one group, and a group's collectives of one kind over one device group merge
/// into one: one latency, the summed buffer. Without fusion ids, automatic bucketing forms the
/// groups by size (in the order gradients become ready) or one per block.
///
/// Overlap: with groups, a group's gradient collective starts once the last micro-batch's
/// backward has produced every gradient in it (a parameter's gradient is complete when the
/// backward reaches its first consumer), and collectives run one at a time. The exposed part is
/// what runs past the end of the backward. Without fusion, every gradient synchronises after the
/// backward, one collective per parameter, fully exposed.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/training.h"
#include "layout/redistribution.h"

namespace autopar::cost {

/// One parameter's collective, before fusion.
struct ParameterCollective {
  std::string parameter;
  std::string block;  ///< its first consumer's block
  int stage = 0;
  std::optional<int> fusionId;
  bool gradient = true;  ///< gradient synchronisation (else the forward all-gather)
  /// Fraction of the stage's backward done when the gradient is complete.
  double readyFraction = 1.0;
  layout::Redistribution redistribution;
};

struct FusedCollective {
  std::string primitive;  ///< "all_reduce", "reduce_scatter", "all_gather"
  bool gradient = true;
  int64_t bytes = 0;  ///< the fused buffer
  double seconds = 0;
  double unfusedSeconds = 0;  ///< the members one by one
};

struct FusionGroup {
  std::string name;  ///< "fusion 1", "bucket 3", "block llm.layer.3"
  int stage = 0;
  std::vector<std::string> parameters;
  std::vector<FusedCollective> collectives;
  double readyFraction = 0;  ///< when its last gradient is ready
};

struct FusionResult {
  std::vector<FusionGroup> groups;                 ///< empty without fusion
  std::vector<double> gradientSyncSeconds;         ///< per stage, after fusion
  std::vector<double> exposedGradientSyncSeconds;  ///< per stage
  std::vector<double> gatherSeconds;  ///< per stage, one micro-batch's parameter all-gathers
  /// Per stage, gatherSeconds over what the same gathers take one parameter at a time: 1 without
  /// fusion.
  std::vector<double> gatherFusionRatio;
};

/// Fuses `collectives` (in graph order) of a plan with `stages` stages; `backwardSeconds` is one
/// micro-batch's backward per stage.
FusionResult fuseCollectives(const std::vector<ParameterCollective>& collectives,
                             const FusionOptions& options,
                             const std::vector<double>& backwardSeconds,
                             const cluster::Cluster& cluster);

}  // namespace autopar::cost
