#pragma once
/// \file
/// `autopar search` on a cluster of device groups (cluster/cluster_groups.h): the configuration
/// search on each group alone, each winner priced in dollars from the group's price, and the
/// group the objective picks: the fastest step (`fastest`), or the fewest dollars per million
/// tokens (`cost`).
///   searchGroups(request, mixed, Objective::kCost)
///   -> h100: TP 2 PP 1 DP 8 ..., 1.21 s, $64.00/h, $0.52 per M tokens; a100: ... (chosen)
/// A plan across groups (pipeline stages on different kinds, data-parallel shares balanced by
/// speed) is not searched: the groups not chosen are left idle, and the result says so.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster_groups.h"
#include "planner/configuration/configuration_search.h"

namespace autopar::planner {

enum class Objective { kFastest, kCost };

/// "fastest" or "cost"; the error lists them.
Expected<Objective> parseObjective(std::string_view name);

struct GroupOutcome {
  cluster::DeviceGroup group;
  std::optional<ConfigurationSearch> found;  ///< with a winner; empty when none
  std::string unmet;                         ///< without one: why (nothing fits, or an error)
  double stepSeconds = 0;
  double tokensPerSecond = 0;
  double dollarsPerHour = 0;  ///< the group's devices at its price
  /// Dollars per million tokens trained at the winner's speed (0 when the group has no price).
  double dollarsPerMillionTokens = 0;
};

struct GroupSearch {
  std::string cluster;  ///< the groups file's name
  Objective objective = Objective::kFastest;
  std::vector<GroupOutcome> groups;  ///< in the file's order
  std::optional<size_t> chosen;      ///< the objective's pick among those with a winner
};

/// Searches `request` (its base's cluster replaced by each group's) on every group. Errors are
/// the request's own (a model that does not load); a group where nothing fits is an outcome.
Expected<GroupSearch> searchGroups(const SearchRequest& request,
                                   const cluster::ClusterGroups& groups, Objective objective);

}  // namespace autopar::planner
