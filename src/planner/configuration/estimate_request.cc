#include "planner/configuration/estimate_request.h"

#include "ir/setting.h"
#include "planner/configuration/block_profile.h"
#include "planner/configuration/profile_table.h"
#include "planner/inputs.h"

namespace autopar::planner {

using Setting = ir::Setting;

namespace {

/// The search's closed-form screen of the configuration: its layers split as the full model
/// splits them by default (evenly), or as a placement says.
Expected<search::AnalyticEstimate> closedFormOf(const MegatronConfig& config,
                                                const ConfigEstimate& estimate,
                                                BlockProfiler& profiler,
                                                const std::optional<search::Placement>& placement) {
  if (placement) {
    return closedFormEstimate(config, profiler, estimate.cluster, placement->layers,
                              placement->recomputed);
  }
  return closedFormEstimate(config, profiler, estimate.cluster,
                            search::evenLayers(profiler.stacks(), config.pp, config.vpp));
}

}  // namespace

Expected<EstimateResult> estimateWithPlacement(const EstimateRequest& request) {
  MegatronConfig config = request.config;
  // The model's dimensions, read once when a placement, the placement search or the closed form
  // needs them; the estimates then take them instead of reading the model again.
  const auto readTransformer = [&config]() -> Status {
    if (config.transformer) return {};
    auto transformer = transformerOf(config);
    if (!transformer) return transformer.error();
    config.transformer = std::move(*transformer);
    return {};
  };
  std::optional<search::Placement> given;
  if (!request.given.empty()) {
    if (request.place) {
      return Error{ir::flag(Setting::kPlace) + ": chooses the placement; drop " +
                   ir::flag(Setting::kLlmLayers)};
    }
    if (auto status = readTransformer(); !status) return status.error();
    auto placement = placementOf(request.given, config, *config.transformer);
    if (!placement) return placement.error();
    applyPlacement(placement->first, placement->second, config);
    given = search::Placement{placement->first, placement->second, 0, {}};
  }
  auto estimate = estimateConfig(config);
  if (!estimate) return estimate.error();
  if (!request.place && !request.closedForm) {
    if (!request.profilePath.empty()) {
      return Error{fmt::format("{}: feeds {} and {}; give one of them", ir::flag(Setting::kProfile),
                               ir::flag(Setting::kClosedForm), ir::flag(Setting::kPlace))};
    }
    return EstimateResult{std::move(config), std::move(*estimate), given, std::nullopt};
  }
  if (auto status = readTransformer(); !status) return status.error();
  const frontend::TransformerConfig& transformer = *config.transformer;
  std::optional<ProfileTable> table;
  if (!request.profilePath.empty()) {
    auto read = readProfileTable(request.profilePath, estimate->cluster.device.name);
    if (!read) return read.error();
    table = std::move(*read);
  }
  BlockProfiler profiler(config, transformer, std::move(table));
  std::optional<search::Placement> placement = given;
  if (request.place) {
    // The search's inner solver on this configuration: exact layer placement and per-stage
    // recompute, then the whole model evaluated with it.
    auto placed = placeConfiguration(config, profiler);
    if (!placed) return placed.error().in(ir::flag(Setting::kPlace));
    if (!*placed) {
      return Error{fmt::format("{}: needs {} greater than 1 and {} none or selective",
                               ir::flag(Setting::kPlace), ir::flag(Setting::kPp),
                               ir::flag(Setting::kRecompute))};
    }
    config = (*placed)->config;
    *estimate = std::move((*placed)->estimate);
    placement = std::move((*placed)->placement);
  }
  std::optional<search::AnalyticEstimate> screen;
  if (request.closedForm) {
    auto closed = closedFormOf(config, *estimate, profiler, placement);
    if (!closed) return closed.error();
    screen = *closed;
  }
  return EstimateResult{std::move(config), std::move(*estimate), std::move(placement),
                        std::move(screen)};
}

}  // namespace autopar::planner
