#include "planner/configuration/group_search.h"

#include <fmt/format.h>

#include <bit>

#include "cost/memory.h"
#include "frontend/transformer.h"

namespace autopar::planner {

namespace {

/// Groups that fit alone beyond which only the set of all of them shares the batch (2^6 - 7 = 57
/// sets of two or more below it).
constexpr size_t kMaxGroupsForSubsets = 6;
/// Groups beyond which no pipeline across them is searched (3 groups: 6 ordered pairs).
constexpr size_t kMaxGroupsForPipelines = 3;

/// The sets of two or more groups that fit alone, as indices in the file's order.
std::vector<std::vector<size_t>> groupSets(const std::vector<GroupOutcome>& alone) {
  std::vector<size_t> fitting;
  for (size_t i = 0; i < alone.size(); ++i) {
    if (alone[i].found) fitting.push_back(i);
  }
  if (fitting.size() < 2) return {};
  if (fitting.size() > kMaxGroupsForSubsets) return {fitting};
  std::vector<std::vector<size_t>> sets;
  for (unsigned mask = 1; mask < (1U << fitting.size()); ++mask) {
    if (std::popcount(mask) < 2) continue;
    std::vector<size_t> members;
    for (size_t bit = 0; bit < fitting.size(); ++bit) {
      if (mask & (1U << bit)) members.push_back(fitting[bit]);
    }
    sets.push_back(std::move(members));
  }
  return sets;
}

}  // namespace

Expected<Objective> parseObjective(std::string_view name) {
  if (name == "fastest") return Objective::kFastest;
  if (name == "cost") return Objective::kCost;
  return Error{fmt::format("--objective {}: expected fastest or cost", name)};
}

bool better(const Throughput& a, const Throughput& b, Objective objective) {
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

void placeOnGroup(MegatronConfig& config, const cluster::DeviceGroup& group, int nodes) {
  config.cluster = group.spec ? group.reference : group.preset;
  config.nodes = nodes;
  config.devicesPerNode = group.spec ? 0 : group.devicesPerNode;
}

double crossGroupGradientBytes(const ConfigurationSearch& found) {
  // What the data-parallel reduction moves: BF16_Optimizer reduces its bf16 cast.
  const int64_t weightBytes = ir::dtypeBytes(ir::DType::kBF16);
  return static_cast<double>(frontend::transformerParameterCount(found.transformer)) *
         static_cast<double>(cost::optimizerSpecOf(*found.best).reducedGradientBytes(weightBytes));
}

Expected<GroupOutcome> searchGroup(SearchRequest request, const cluster::DeviceGroup& group,
                                   int64_t samples) {
  placeOnGroup(request.base, group, group.nodes);
  request.base.gbs = samples;
  GroupOutcome outcome;
  outcome.group = group;
  outcome.samples = samples;
  auto found = searchConfigurations(request);
  if (!found) return found.error();
  if (!found->best) {
    outcome.unmet = nothingFitsAdvice(*found, group.nodes);
    return outcome;
  }
  outcome.throughput =
      throughputOf(found->bestSeconds, static_cast<double>(samples * found->sequence), {&group});
  outcome.found = std::move(*found);
  return outcome;
}

const Throughput& GroupSearch::throughputOf(Choice choice) const {
  switch (choice.kind) {
    case Choice::kShared:
      return shared[choice.index].throughput;
    case Choice::kPipeline:
      return pipelines[choice.index].throughput;
    case Choice::kAlone:
      break;
  }
  return groups[choice.index].throughput;
}

const Throughput& GroupSearch::chosenThroughput() const { return throughputOf(*chosen); }

namespace {

/// Every group alone at its size, then the sets of groups sharing the batch.
Expected<GroupSearch> searchEveryGroup(const SearchRequest& request,
                                       const cluster::ClusterGroups& groups,
                                       const GroupSearchOptions& options) {
  GroupSearch search;
  search.cluster = groups.name;
  search.options = options;
  search.globalBatch = request.base.gbs;
  for (const cluster::DeviceGroup& group : groups.groups) {
    auto outcome = searchGroup(request, group, request.base.gbs);
    if (!outcome) return outcome.error().in(fmt::format("group {}", group.name));
    search.groups.push_back(std::move(*outcome));
  }
  if (options.crossGroup) {
    for (const std::vector<size_t>& members : groupSets(search.groups)) {
      auto plan = shareBatch(request, groups, search.groups, members);
      if (!plan) return plan.error();
      if (*plan) search.shared.push_back(std::move(**plan));
    }
    if (groups.groups.size() <= kMaxGroupsForPipelines) {
      for (size_t front = 0; front < groups.groups.size(); ++front) {
        for (size_t back = 0; back < groups.groups.size(); ++back) {
          if (front == back) continue;
          auto pipeline = splitPipeline(request, groups, front, back);
          if (!pipeline) return pipeline.error();
          if (*pipeline) search.pipelines.push_back(std::move(**pipeline));
        }
      }
    }
  }
  using Choice = GroupSearch::Choice;
  for (size_t i = 0; i < search.groups.size(); ++i) {
    if (search.groups[i].found) search.consider(Choice::kAlone, i);
  }
  for (size_t i = 0; i < search.shared.size(); ++i) search.consider(Choice::kShared, i);
  for (size_t i = 0; i < search.pipelines.size(); ++i) search.consider(Choice::kPipeline, i);
  return search;
}

}  // namespace

void GroupSearch::consider(Choice::Kind kind, size_t index) {
  const Choice choice{kind, index};
  if (!chosen || better(throughputOf(choice), chosenThroughput(), options.objective)) {
    chosen = choice;
  }
}

Expected<GroupSearch> searchGroups(const SearchRequest& request,
                                   const cluster::ClusterGroups& groups,
                                   const GroupSearchOptions& options) {
  auto search = options.availability ? chooseDevices(request, groups, options)
                                     : searchEveryGroup(request, groups, options);
  if (!search) return search.error();
  if (options.objective == Objective::kCost && search->chosen &&
      search->chosenThroughput().dollarsPerMillionTokens == 0) {
    return Error{
        fmt::format("--objective cost: {} gives no group a price_per_device_hour", groups.name)};
  }
  return search;
}

}  // namespace autopar::planner
