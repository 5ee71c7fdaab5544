// The availability question (group_search.h, chooseDevices): which devices of each group to use.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <set>

#include "frontend/transformer.h"
#include "planner/configuration/group_search.h"
#include "util/closest_name.h"
#include "util/in_parallel.h"
#include "util/limits.h"

namespace autopar::planner {

namespace {

/// Combinations of sizes across groups planned exactly, best estimates first.
constexpr size_t kPlannedExactly = 3;

/// The node counts a group is searched at: powers of two below what it offers, what it offers,
/// and the most the budget alone affords it.
std::vector<int> sizeLadder(const cluster::DeviceGroup& group, int offered, double budget) {
  std::set<int> sizes;
  for (int nodes = 1; nodes < offered; nodes *= 2) sizes.insert(nodes);
  if (offered > 0) sizes.insert(offered);
  if (budget > 0 && group.pricePerDeviceHour > 0) {
    const double affordable = budget / (group.pricePerDeviceHour * group.devicesPerNode);
    if (affordable >= 1 && affordable < offered) sizes.insert(static_cast<int>(affordable));
  }
  return {sizes.begin(), sizes.end()};
}

/// A choice of sizes: per group its nodes (0: unused) and its priced estimate.
struct Combination {
  std::vector<int> nodes;
  Throughput estimate;
  bool exact = false;  ///< one group alone: its search's own figures
};

/// Whether a plan meets the floor and the budget.
bool meets(const Throughput& throughput, const Availability& offered) {
  if (offered.minTokensPerSecond > 0 && throughput.tokensPerSecond < offered.minTokensPerSecond) {
    return false;
  }
  return offered.maxDollarsPerHour <= 0 || throughput.dollarsPerHour <= offered.maxDollarsPerHour;
}

/// The groups resized to `nodes`, without the unused ones; `members` maps back to the file's.
cluster::ClusterGroups resized(const cluster::ClusterGroups& groups, const std::vector<int>& nodes,
                               std::vector<size_t>* members) {
  cluster::ClusterGroups sized = groups;
  sized.groups.clear();
  for (size_t g = 0; g < nodes.size(); ++g) {
    if (nodes[g] == 0) continue;
    cluster::DeviceGroup group = groups.groups[g];
    group.nodes = nodes[g];
    sized.groups.push_back(group);
    if (members) members->push_back(g);
  }
  return sized;
}

/// 0, 1, ..., count - 1.
std::vector<size_t> firstIndices(size_t count) {
  std::vector<size_t> indices(count);
  std::iota(indices.begin(), indices.end(), 0);
  return indices;
}

/// "no choice of devices meets ...": the constraint no combination met, and what came closest.
std::string unmetConstraints(const Availability& offered, const std::vector<Combination>& all) {
  const Combination* fastest = nullptr;
  const Combination* cheapest = nullptr;
  for (const Combination& combination : all) {
    if (combination.estimate.tokensPerSecond <= 0) continue;
    if (!fastest || combination.estimate.tokensPerSecond > fastest->estimate.tokensPerSecond) {
      fastest = &combination;
    }
    if (!cheapest || combination.estimate.dollarsPerHour < cheapest->estimate.dollarsPerHour) {
      cheapest = &combination;
    }
  }
  if (!fastest) return "nothing fits on any size of any group";
  std::string text = "no choice of devices meets";
  if (offered.minTokensPerSecond > 0) {
    text += fmt::format(" --min-tokens-per-s {:.0f}", offered.minTokensPerSecond);
  }
  if (offered.maxDollarsPerHour > 0) {
    text += fmt::format("{} --max-dollars-per-hour {:g}",
                        offered.minTokensPerSecond > 0 ? " with" : "", offered.maxDollarsPerHour);
  }
  return text + fmt::format(
                    ": the fastest choice trains about {:.0f} tokens/s at ${:.2f}/hour, the "
                    "cheapest that fits costs ${:.2f}/hour",
                    fastest->estimate.tokensPerSecond, fastest->estimate.dollarsPerHour,
                    cheapest->estimate.dollarsPerHour);
}

}  // namespace

Expected<Availability> parseAvailability(std::string_view text,
                                         const cluster::ClusterGroups& groups) {
  Availability offered;
  for (const cluster::DeviceGroup& group : groups.groups) {
    offered.nodes.push_back(text.empty() ? group.nodes : 0);
  }
  std::set<std::string> named;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      return Error{fmt::format("--available {}: expected GROUP=NODES, e.g. {}=2", item,
                               groups.groups.front().name)};
    }
    const std::string name(item.substr(0, equals));
    const auto group = std::find_if(groups.groups.begin(), groups.groups.end(),
                                    [&](const auto& g) { return g.name == name; });
    if (group == groups.groups.end()) {
      std::vector<std::string> names;
      for (const auto& g : groups.groups) names.push_back(g.name);
      return Error{fmt::format("--available {}: no group named '{}'; the groups are {}", item, name,
                               fmt::join(names, ", "))};
    }
    if (!named.insert(name).second) {
      return Error{fmt::format("--available {}: names {} twice", item, name)};
    }
    const std::string_view count = item.substr(equals + 1);
    int nodes = -1;
    const auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), nodes);
    const int64_t most = limits::kMaxDevices / group->devicesPerNode;
    if (error != std::errc{} || end != count.data() + count.size() || nodes < 0 || nodes > most) {
      return Error{fmt::format("--available {}: expected a node count from 0 to {}, got '{}'", item,
                               most, count)};
    }
    offered.nodes[group - groups.groups.begin()] = nodes;
  }
  if (std::all_of(offered.nodes.begin(), offered.nodes.end(), [](int n) { return n == 0; })) {
    return Error{"--available: offers no node of any group"};
  }
  return offered;
}

Expected<GroupSearch> chooseDevices(const SearchRequest& request,
                                    const cluster::ClusterGroups& groups,
                                    const GroupSearchOptions& options) {
  const Availability& offered = *options.availability;
  const size_t count = groups.groups.size();
  DeviceChoice choice{offered};
  // Each group alone at each size of its ladder, searched a core at a time.
  std::vector<std::pair<size_t, int>> searches;
  for (size_t g = 0; g < count; ++g) {
    choice.sizes.push_back(
        sizeLadder(groups.groups[g], offered.nodes[g], offered.maxDollarsPerHour));
    for (int nodes : choice.sizes.back()) searches.emplace_back(g, nodes);
  }
  auto outcomes = util::inParallelBatches(searches.size(), [&](size_t i) {
    cluster::DeviceGroup group = groups.groups[searches[i].first];
    group.nodes = searches[i].second;
    return searchGroup(request, group, request.base.gbs);
  });
  // A size no configuration shape fits (a batch too small for its devices) is an outcome
  // without a winner; only when every size of every group fails is the error the answer (the
  // model itself does not load).
  std::vector<std::map<int, GroupOutcome>> alone(count);
  const bool anySearched = std::any_of(outcomes.begin(), outcomes.end(),
                                       [](const auto& outcome) { return outcome.ok(); });
  for (size_t i = 0; i < searches.size(); ++i) {
    const cluster::DeviceGroup& group = groups.groups[searches[i].first];
    if (!outcomes[i] && !anySearched) {
      return outcomes[i].error().in(fmt::format("group {}", group.name));
    }
    GroupOutcome outcome;
    if (outcomes[i]) {
      outcome = std::move(*outcomes[i]);
    } else {
      outcome.group = group;
      outcome.group.nodes = searches[i].second;
      outcome.samples = request.base.gbs;
      outcome.unmet = outcomes[i].error().message;
    }
    alone[searches[i].first].emplace(searches[i].second, std::move(outcome));
  }

  // Every combination of sizes (0 included), priced: one group alone exactly, several from their
  // speeds alone (the batch shared in proportion) plus the synchronisation across them.
  const SearchRequest& base = request;
  double gradientBytes = 0;
  int64_t sequence = 0;
  for (const auto& sizes : alone) {
    for (const auto& [nodes, outcome] : sizes) {
      if (!outcome.found || gradientBytes > 0) continue;
      gradientBytes =
          static_cast<double>(frontend::transformerParameterCount(outcome.found->transformer)) *
          (outcome.found->best->fp32Gradients() ? 4 : 2);
      sequence = outcome.found->sequence;
    }
  }
  std::vector<Combination> combinations;
  std::vector<int> nodes(count, 0);
  std::vector<size_t> position(count, 0);  // 0: unused, else 1 + index into choice.sizes[g]
  for (;;) {
    size_t g = 0;
    while (g < count && position[g] == choice.sizes[g].size()) position[g++] = 0;
    if (g == count) break;
    ++position[g];
    std::vector<int> sizes(count);
    double samplesPerSecond = 0;
    Combination combination;
    bool fits = true;
    std::vector<size_t> members;
    for (size_t k = 0; k < count; ++k) {
      sizes[k] = position[k] == 0 ? 0 : choice.sizes[k][position[k] - 1];
      if (sizes[k] == 0) continue;
      const GroupOutcome& outcome = alone[k].at(sizes[k]);
      fits = fits && outcome.found.has_value();
      if (!fits) break;
      samplesPerSecond += static_cast<double>(base.base.gbs) / outcome.throughput.stepSeconds;
      combination.estimate.dollarsPerHour += outcome.throughput.dollarsPerHour;
      members.push_back(k);
    }
    if (!fits) continue;
    combination.nodes = sizes;
    if (members.size() == 1) {
      combination.estimate = alone[members[0]].at(sizes[members[0]]).throughput;
      combination.exact = true;
    } else {
      auto sync = crossGroupSync(resized(groups, sizes, nullptr), firstIndices(members.size()),
                                 gradientBytes);
      if (!sync) return sync.error();
      combination.estimate.stepSeconds =
          static_cast<double>(base.base.gbs) / samplesPerSecond + sync->seconds;
      combination.estimate.tokensPerSecond =
          static_cast<double>(base.base.gbs * sequence) / combination.estimate.stepSeconds;
      const bool priced = std::all_of(members.begin(), members.end(), [&](size_t k) {
        return groups.groups[k].pricePerDeviceHour > 0;
      });
      combination.estimate.dollarsPerMillionTokens =
          priced ? dollarsPerMillionTokens(combination.estimate) : 0;
    }
    combinations.push_back(std::move(combination));
  }
  choice.combinations = static_cast<int>(combinations.size());

  // The combinations across groups that may meet the constraints (an estimate is at least as
  // fast as the plan: each group is slower per sample on a share than on the whole batch), best
  // first; the first few planned exactly.
  std::vector<const Combination*> across;
  for (const Combination& combination : combinations) {
    if (options.crossGroup && !combination.exact && meets(combination.estimate, offered)) {
      across.push_back(&combination);
    }
  }
  std::stable_sort(across.begin(), across.end(), [&](const Combination* a, const Combination* b) {
    return better(a->estimate, b->estimate, options.objective);
  });
  across.resize(std::min(across.size(), kPlannedExactly));
  auto planned =
      util::inParallelBatches(across.size(), [&](size_t i) -> Expected<std::optional<SharedPlan>> {
        std::vector<size_t> members;
        const cluster::ClusterGroups sized = resized(groups, across[i]->nodes, &members);
        std::vector<GroupOutcome> sizedAlone;
        for (size_t k : members) sizedAlone.push_back(alone[k].at(across[i]->nodes[k]));
        return shareBatch(request, sized, sizedAlone, firstIndices(members.size()));
      });
  choice.plannedExactly = static_cast<int>(planned.size());

  GroupSearch search;
  search.cluster = groups.name;
  search.options = options;
  search.globalBatch = request.base.gbs;
  for (auto& plan : planned) {
    if (!plan) return plan.error();
    if (*plan && meets((*plan)->throughput, offered)) search.shared.push_back(std::move(**plan));
  }
  // Each group alone: its best size within the constraints.
  for (size_t g = 0; g < count; ++g) {
    const GroupOutcome* best = nullptr;
    for (const auto& [nodes, outcome] : alone[g]) {
      if (!outcome.found || !meets(outcome.throughput, offered)) continue;
      if (!best || better(outcome.throughput, best->throughput, options.objective)) {
        best = &outcome;
      }
    }
    if (best) {
      search.groups.push_back(*best);
      continue;
    }
    GroupOutcome none;
    none.group = groups.groups[g];
    none.group.nodes = offered.nodes[g];
    none.samples = request.base.gbs;
    none.unmet = offered.nodes[g] == 0             ? "none on offer"
                 : alone[g].rbegin()->second.found ? "no size alone meets the constraints"
                                                   : "nothing fits on what is offered";
    search.groups.push_back(std::move(none));
  }
  for (size_t g = 0; g < count; ++g) {
    if (search.groups[g].found) search.consider(GroupSearch::Choice::kAlone, g);
  }
  for (size_t i = 0; i < search.shared.size(); ++i) {
    search.consider(GroupSearch::Choice::kShared, i);
  }
  if (!search.chosen) choice.unmet = unmetConstraints(offered, combinations);
  search.devices = std::move(choice);
  return search;
}

}  // namespace autopar::planner
