#pragma once
/// \file
/// Non-uniform layer placement for a searched configuration (PP > 1, no interleaving): the
/// per-layer and per-end costs come from the same cost model, measured on 2- and 4-layer
/// versions of the model split over two stages, with and without full recompute (seed 003's
/// black-box sampling, done analytically: the difference of the two is one layer). The exact
/// solver of search/layer_placement.h then places the layers and picks per-stage recompute, and
/// the whole model is evaluated again with that placement.

#include <optional>

#include "cli/megatron_estimate.h"
#include "search/layer_placement.h"
#include "util/expected.h"

namespace autopar::cli {

struct PlacedEstimate {
  MegatronConfig config;  ///< with the placement's stages and recompute blocks
  ConfigEstimate estimate;
  search::Placement placement;
};

/// The placement problem of `config` (its stages, micro-batches and device memory).
Expected<search::PlacementProblem> probePlacementProblem(
    const MegatronConfig& config, const frontend::TransformerConfig& transformer);

/// The placed configuration when PP > 1, VPP is 1, recompute is not already full and the
/// placement fits; nullopt when placement does not apply.
Expected<std::optional<PlacedEstimate>> placeConfiguration(
    const MegatronConfig& config, const frontend::TransformerConfig& transformer);

}  // namespace autopar::cli
