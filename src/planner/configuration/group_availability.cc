// The availability question (group_search.h, chooseDevices): which devices of each group to use.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <set>

#include "planner/configuration/group_search.h"
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

/// Each group alone at each size of its ladder, searched a core at a time: per group, its
/// outcome by node count. A size no configuration shape fits (a batch too small for its devices)
/// is an outcome without a winner; only when every size of every group fails is the error the
/// answer (the model itself does not load).
using SizeOutcomes = std::vector<std::map<int, GroupOutcome>>;
Expected<SizeOutcomes> searchLadders(const SearchRequest& request,
                                     const cluster::ClusterGroups& groups,
                                     const std::vector<std::vector<int>>& ladders) {
  std::vector<std::pair<size_t, int>> searches;
  for (size_t g = 0; g < ladders.size(); ++g) {
    for (int nodes : ladders[g]) searches.emplace_back(g, nodes);
  }
  auto outcomes = util::inParallelBatches(searches.size(), [&](size_t i) {
    cluster::DeviceGroup group = groups.groups[searches[i].first];
    group.nodes = searches[i].second;
    return searchGroup(request, group, request.base.gbs);
  });
  const bool anySearched = std::any_of(outcomes.begin(), outcomes.end(),
                                       [](const auto& outcome) { return outcome.ok(); });
  SizeOutcomes alone(ladders.size());
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
  return alone;
}

/// The bytes of gradient all-reduced across groups and the sequence, from any winner.
std::pair<double, int64_t> gradientAndSequence(const SizeOutcomes& alone) {
  for (const auto& sizes : alone) {
    for (const auto& [nodes, outcome] : sizes) {
      if (outcome.found) return {crossGroupGradientBytes(*outcome.found), outcome.found->sequence};
    }
  }
  return {0, 0};
}

/// Every combination of sizes (0 included) whose groups each have a winner, priced: one group
/// alone exactly, several from their speeds alone (the batch shared in proportion) plus the
/// synchronisation across them.
Expected<std::vector<Combination>> priceCombinations(const SearchRequest& request,
                                                     const cluster::ClusterGroups& groups,
                                                     const std::vector<std::vector<int>>& ladders,
                                                     const SizeOutcomes& alone) {
  const size_t count = ladders.size();
  const auto [gradientBytes, sequence] = gradientAndSequence(alone);
  const auto batch = static_cast<double>(request.base.gbs);
  std::vector<Combination> combinations;
  std::vector<size_t> position(count, 0);  // 0: unused, else 1 + index into ladders[g]
  for (;;) {
    size_t g = 0;
    while (g < count && position[g] == ladders[g].size()) position[g++] = 0;
    if (g == count) break;
    ++position[g];
    Combination combination;
    combination.nodes.assign(count, 0);
    double samplesPerSecond = 0;
    std::vector<const GroupOutcome*> members;
    bool fits = true;
    for (size_t k = 0; k < count && fits; ++k) {
      if (position[k] == 0) continue;
      combination.nodes[k] = ladders[k][position[k] - 1];
      const GroupOutcome& outcome = alone[k].at(combination.nodes[k]);
      fits = outcome.found.has_value();
      samplesPerSecond += fits ? batch / outcome.throughput.stepSeconds : 0;
      members.push_back(&outcome);
    }
    if (!fits) continue;
    if (members.size() == 1) {
      combination.estimate = members.front()->throughput;
      combination.exact = true;
      combinations.push_back(std::move(combination));
      continue;
    }
    auto sync = crossGroupSync(resized(groups, combination.nodes, nullptr),
                               firstIndices(members.size()), gradientBytes);
    if (!sync) return sync.error();
    std::vector<const cluster::DeviceGroup*> used;
    for (const GroupOutcome* member : members) used.push_back(&member->group);
    combination.estimate = throughputOf(batch / samplesPerSecond + sync->seconds,
                                        batch * static_cast<double>(sequence), used);
    combinations.push_back(std::move(combination));
  }
  return combinations;
}

/// The combinations across groups that may meet the constraints (an estimate is at least as
/// fast as the plan: each group is slower per sample on a share than on the whole batch), best
/// first, the first kPlannedExactly planned exactly: those that meet the constraints, and how
/// many were planned.
Expected<std::pair<std::vector<SharedPlan>, int>> planAcross(
    const SearchRequest& request, const cluster::ClusterGroups& groups, const SizeOutcomes& alone,
    const std::vector<Combination>& combinations, const GroupSearchOptions& options) {
  const Availability& offered = *options.availability;
  std::vector<const Combination*> across;
  for (const Combination& combination : combinations) {
    if (!combination.exact && meets(combination.estimate, offered)) across.push_back(&combination);
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
  std::vector<SharedPlan> meeting;
  for (auto& plan : planned) {
    if (!plan) return plan.error();
    if (*plan && meets((*plan)->throughput, offered)) meeting.push_back(std::move(**plan));
  }
  return std::pair{std::move(meeting), static_cast<int>(planned.size())};
}

/// A group alone: its best size within the constraints, or why none.
GroupOutcome bestAlone(const cluster::DeviceGroup& group, const std::map<int, GroupOutcome>& sizes,
                       int64_t batch, const GroupSearchOptions& options) {
  const Availability& offered = *options.availability;
  const GroupOutcome* best = nullptr;
  for (const auto& [nodes, outcome] : sizes) {
    if (!outcome.found || !meets(outcome.throughput, offered)) continue;
    if (!best || better(outcome.throughput, best->throughput, options.objective)) {
      best = &outcome;
    }
  }
  if (best) return *best;
  GroupOutcome none;
  none.group = group;
  none.group.nodes = sizes.empty() ? 0 : sizes.rbegin()->first;
  none.samples = batch;
  none.unmet = sizes.empty()                  ? "none on offer"
               : sizes.rbegin()->second.found ? "no size alone meets the constraints"
                                              : "nothing fits on what is offered";
  return none;
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
    auto index = groups.indexOf(name);
    if (!index) return index.error().in(fmt::format("--available {}", item));
    const cluster::DeviceGroup& group = groups.groups[*index];
    if (!named.insert(name).second) {
      return Error{fmt::format("--available {}: names {} twice", item, name)};
    }
    const std::string_view count = item.substr(equals + 1);
    int nodes = -1;
    const auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), nodes);
    const int64_t most = limits::kMaxDevices / group.devicesPerNode;
    if (error != std::errc{} || end != count.data() + count.size() || nodes < 0 || nodes > most) {
      return Error{fmt::format("--available {}: expected a node count from 0 to {}, got '{}'", item,
                               most, count)};
    }
    offered.nodes[*index] = nodes;
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
  DeviceChoice choice;
  choice.offered = offered;
  for (size_t g = 0; g < groups.groups.size(); ++g) {
    choice.sizes.push_back(
        sizeLadder(groups.groups[g], offered.nodes[g], offered.maxDollarsPerHour));
  }
  auto alone = searchLadders(request, groups, choice.sizes);
  if (!alone) return alone.error();
  auto combinations = priceCombinations(request, groups, choice.sizes, *alone);
  if (!combinations) return combinations.error();
  choice.combinations = static_cast<int>(combinations->size());
  GroupSearch search;
  search.cluster = groups.name;
  search.options = options;
  search.globalBatch = request.base.gbs;
  if (options.crossGroup) {
    auto shared = planAcross(request, groups, *alone, *combinations, options);
    if (!shared) return shared.error();
    choice.plannedExactly = shared->second;
    search.shared = std::move(shared->first);
  }
  for (size_t g = 0; g < groups.groups.size(); ++g) {
    search.groups.push_back(bestAlone(groups.groups[g], (*alone)[g], request.base.gbs, options));
    if (search.groups.back().found) search.consider(GroupSearch::Choice::kAlone, g);
  }
  for (size_t i = 0; i < search.shared.size(); ++i) {
    search.consider(GroupSearch::Choice::kShared, i);
  }
  if (!search.chosen) choice.unmet = unmetConstraints(offered, *combinations);
  search.devices = std::move(choice);
  return search;
}

}  // namespace autopar::planner
