#pragma once
/// \file
/// `autopar estimate`'s pipeline for one configuration: optionally a given layer placement
/// (seed 003's layer_placement and layer_recompute) or the exact placement search (--place), the
/// full model's estimate, and optionally the search's closed-form screen of it (--closed-form),
/// on analytic or measured blocks (--profile).

#include <optional>
#include <string>

#include "planner/configuration/configuration_estimate.h"
#include "search/layer_level/analytic_step.h"
#include "search/layer_level/layer_placement.h"
#include "util/expected.h"

namespace autopar::planner {

struct EstimateRequest {
  MegatronConfig config;
  GivenPlacement given;     ///< layers per stage; empty: split evenly
  bool place = false;       ///< place the layers exactly, with per-stage recompute
  bool closedForm = false;  ///< also the closed-form screen's estimate
  std::string profilePath;  ///< a measured block table for place and closedForm
};

struct EstimateResult {
  MegatronConfig config;  ///< with the placement's stages and recomputed blocks
  ConfigEstimate estimate;
  std::optional<search::Placement> placement;      ///< given or placed
  std::optional<search::AnalyticEstimate> screen;  ///< with closedForm
};

/// Errors name the flag (--place, --llm-layers, --profile) and what was expected.
Expected<EstimateResult> estimateWithPlacement(const EstimateRequest& request);

}  // namespace autopar::planner
