#include "planner/configuration/group_search.h"

#include <fmt/format.h>

namespace autopar::planner {

namespace {

constexpr double kSecondsPerHour = 3600;

/// The outcome of one group: its search, its winner's speed and price.
Expected<GroupOutcome> searchGroup(SearchRequest request, const cluster::DeviceGroup& group) {
  // The group as ClusterGroups::clusterOf makes it: its preset over its nodes, by name, as the
  // configuration search loads clusters.
  request.base.cluster = group.preset;
  request.base.nodes = group.nodes;
  request.base.devicesPerNode = group.devicesPerNode;
  GroupOutcome outcome{group};
  outcome.dollarsPerHour = group.pricePerDeviceHour * group.devices();
  auto found = searchConfigurations(request);
  if (!found) return found.error();
  if (!found->best) {
    outcome.unmet = nothingFitsAdvice(*found, group.nodes);
    return outcome;
  }
  outcome.stepSeconds = found->bestSeconds;
  outcome.tokensPerSecond = found->estimate->tokensPerSecond;
  if (outcome.tokensPerSecond > 0 && group.pricePerDeviceHour > 0) {
    const double tokensPerHour = outcome.tokensPerSecond * kSecondsPerHour;
    outcome.dollarsPerMillionTokens = outcome.dollarsPerHour / tokensPerHour * 1e6;
  }
  outcome.found = std::move(*found);
  return outcome;
}

/// Whether `a` serves the objective better than `b` (both with a winner). Under `cost`, a group
/// without a price cannot be compared and loses to one with a price.
bool better(const GroupOutcome& a, const GroupOutcome& b, Objective objective) {
  if (objective == Objective::kCost) {
    const bool aPriced = a.dollarsPerMillionTokens > 0;
    const bool bPriced = b.dollarsPerMillionTokens > 0;
    if (aPriced != bPriced) return aPriced;
    if (aPriced && a.dollarsPerMillionTokens != b.dollarsPerMillionTokens) {
      return a.dollarsPerMillionTokens < b.dollarsPerMillionTokens;
    }
  }
  return a.tokensPerSecond > b.tokensPerSecond;
}

}  // namespace

Expected<Objective> parseObjective(std::string_view name) {
  if (name == "fastest") return Objective::kFastest;
  if (name == "cost") return Objective::kCost;
  return Error{fmt::format("--objective {}: expected fastest or cost", name)};
}

Expected<GroupSearch> searchGroups(const SearchRequest& request,
                                   const cluster::ClusterGroups& groups, Objective objective) {
  GroupSearch search{groups.name, objective};
  for (const cluster::DeviceGroup& group : groups.groups) {
    auto outcome = searchGroup(request, group);
    if (!outcome) return outcome.error().in(fmt::format("group {}", group.name));
    search.groups.push_back(std::move(*outcome));
  }
  for (size_t i = 0; i < search.groups.size(); ++i) {
    if (!search.groups[i].found) continue;
    if (!search.chosen || better(search.groups[i], search.groups[*search.chosen], objective)) {
      search.chosen = i;
    }
  }
  if (objective == Objective::kCost && search.chosen &&
      search.groups[*search.chosen].dollarsPerMillionTokens == 0) {
    return Error{
        fmt::format("--objective cost: {} gives no group a price_per_device_hour", groups.name)};
  }
  return search;
}

}  // namespace autopar::planner
