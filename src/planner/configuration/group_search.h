#pragma once
/// \file
/// `autopar search` on a cluster of device groups (cluster/cluster_groups.h). Each group is
/// searched alone, and, across groups, plans whose data-parallel replicas span them: each group
/// trains the model on its share of the global batch with the configuration its own search picks
/// for that share, the shares balanced so the groups finish together, and the gradients are
/// synchronised hierarchically (reduced inside each group as on one group, the reduced shards
/// all-reduced across groups over the slowest link between them, gathered inside again). Every
/// plan is priced in dollars from the groups' prices, and the objective picks one: the fastest
/// step (`fastest`), or the fewest dollars per million tokens (`cost`).
///   searchGroups(request, mixed, {Objective::kFastest})
///   -> h100 alone 10.23 s; a100 alone 13.07 s; h100 + a100 sharing the batch 6.1 s (chosen)
/// Pipeline stages on different kinds are not searched: a cross-group plan needs each group to
/// hold a whole replica.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster_groups.h"
#include "planner/configuration/configuration_search.h"
#include "sim/step_estimate.h"

namespace autopar::planner {

enum class Objective { kFastest, kCost };

/// "fastest" or "cost"; the error lists them.
Expected<Objective> parseObjective(std::string_view name);

/// The availability question (Sailor's, SOSP'25): which of the devices on offer to use. Each
/// group may use from 0 up to `nodes` of its nodes; the plan must train at least
/// `minTokensPerSecond` and cost at most `maxDollarsPerHour` (0: no floor, no budget).
struct Availability {
  std::vector<int> nodes;  ///< per group, in the file's order
  double minTokensPerSecond = 0;
  double maxDollarsPerHour = 0;
};

/// "h100=2,a100=4": nodes on offer per group (groups left out offer none); each at most 2^20.
/// Empty text: every group's own size. Errors name --available and the group.
Expected<Availability> parseAvailability(std::string_view text,
                                         const cluster::ClusterGroups& groups);

struct GroupSearchOptions {
  Objective objective = Objective::kFastest;
  /// Also search plans across groups (data-parallel shares); off: each group alone.
  bool crossGroup = true;
  /// Choose how many nodes of each group to use (chooseDevices); empty: all of each.
  std::optional<Availability> availability;
};

/// What a plan trains per second and what it costs.
struct Throughput {
  double stepSeconds = 0;
  double tokensPerSecond = 0;
  double dollarsPerHour = 0;  ///< its devices at their groups' prices
  /// Dollars per million tokens trained at its speed (0 when a device it uses has no price).
  double dollarsPerMillionTokens = 0;
};

/// Dollars per hour over million tokens per hour (0 at no speed).
double dollarsPerMillionTokens(const Throughput& throughput);

/// A plan's throughput and price from its step, the tokens it trains in one, and the groups whose
/// devices it uses (each at its size): dollars per million tokens only when every one is priced.
Throughput throughputOf(double stepSeconds, double tokensPerStep,
                        const std::vector<const cluster::DeviceGroup*>& groups);

/// `config` on `group`'s device over `nodes` nodes, named as the configuration search loads
/// clusters: the group's preset by name, or its spec by reference ("mixed.yaml#v100").
void placeOnGroup(MegatronConfig& config, const cluster::DeviceGroup& group, int nodes);

/// The bytes of gradient the groups all-reduce across one another: the model's parameters in the
/// gradients' dtype (fp32 unless the code path reduces in bf16).
double crossGroupGradientBytes(const ConfigurationSearch& found);

/// One group's search on a batch: the whole global batch, or its share of it.
struct GroupOutcome {
  cluster::DeviceGroup group;
  int64_t samples = 0;                       ///< the batch it trains per step
  std::optional<ConfigurationSearch> found;  ///< with a winner; empty when none
  std::string unmet;                         ///< without one: why (nothing fits, or an error)
  Throughput throughput;                     ///< its winner's (zeros without one)
};

/// Searches `request` (its base's cluster replaced by the group's, its global batch by
/// `samples`) on one group. A group where nothing fits is an outcome, not an error.
Expected<GroupOutcome> searchGroup(SearchRequest request, const cluster::DeviceGroup& group,
                                   int64_t samples);

/// A plan whose data-parallel replicas span several groups.
struct SharedPlan {
  std::vector<GroupOutcome> shares;  ///< per group it uses, in the file's order; samples sum
                                     ///< to the global batch
  double slowestGroupSeconds = 0;    ///< the slowest group's step on its share
  double syncSeconds = 0;            ///< the gradient all-reduce across groups, after it
  std::string syncLink;              ///< the slowest link it crosses, "h100-a100 at 100 Gbit/s"
  Throughput throughput;
};

/// The shares of `members` (indices into `groups.groups`, 2 or more, each with its winner on the
/// whole batch in `alone`) that make the fastest step: shares start in proportion to each group's
/// speed alone and move a quantum (1/32 of the batch, rounded to a divisor) at a time from the
/// slowest group while that shortens the step. Empty when no split fits.
Expected<std::optional<SharedPlan>> shareBatch(const SearchRequest& request,
                                               const cluster::ClusterGroups& groups,
                                               const std::vector<GroupOutcome>& alone,
                                               const std::vector<size_t>& members);

/// What answering the availability question looked at.
struct DeviceChoice {
  Availability offered;
  std::vector<std::vector<int>> sizes;  ///< per group, the node counts searched alone
  int combinations = 0;                 ///< sets of sizes priced (estimated across groups)
  int plannedExactly = 0;               ///< of them, planned across groups exactly
  std::string unmet;  ///< when no choice meets the constraints: which, and what came closest
};

/// A pipeline across two groups (Metis's kind of plan): its first stages on one group, the rest
/// on the other, every stage TP x DP devices of its group, the layers split so each kind's stages
/// take about the same time. Each stage's costs and memory are the configuration's evaluated on
/// its own device; the pipeline simulator runs the spliced stages, the activations between the
/// groups crossing the link between them.
struct SplitPipeline {
  size_t front = 0;  ///< the group of the first stages (an index into ClusterGroups::groups)
  size_t back = 0;
  int frontStages = 0;
  MegatronConfig config;        ///< TP, PP, DP, micro-batch, recompute, ZeRO, placement
  std::vector<int64_t> layers;  ///< per stage
  cost::CostReport report;      ///< spliced: stage s's costs from its own device
  sim::PipelineShape pipeline;
  sim::StepEstimate step;
  std::vector<int64_t> peakBytes;    ///< per stage, the runtime reserve included
  std::vector<int64_t> deviceBytes;  ///< per stage, its device's memory
  bool fits = false;                 ///< every stage on its own device
  double boundarySeconds = 0;        ///< one micro-batch's activations across the groups
  std::string link;
  int64_t sequence = 0;
  Throughput throughput;
  /// The group stage `stage` runs on (an index into ClusterGroups::groups).
  [[nodiscard]] size_t groupOf(size_t stage) const {
    return stage < static_cast<size_t>(frontStages) ? front : back;
  }
};

/// The fastest pipeline with its first stages on `front` and the rest on `back`, using every
/// device of both (TP within a node, ZeRO 1 where the framework runs it, 1F1B, micro-batch 1 or
/// 2, no recompute or full);
/// empty when none fits, or for a vision tower or experts (one text stack only).
Expected<std::optional<SplitPipeline>> splitPipeline(const SearchRequest& request,
                                                     const cluster::ClusterGroups& groups,
                                                     size_t front, size_t back);

struct GroupSearch {
  std::string cluster;  ///< the groups file's name
  GroupSearchOptions options;
  int64_t globalBatch = 0;
  std::vector<GroupOutcome> groups;  ///< each alone on the whole batch, in the file's order
  std::vector<SharedPlan> shared;    ///< the best split of each set of groups that has one
  /// The fastest pipeline of each ordered pair of groups that has one (up to 3 groups).
  std::vector<SplitPipeline> pipelines;
  /// The objective's pick: a group alone (an index into `groups`), a shared plan (into `shared`)
  /// or a pipeline across groups (into `pipelines`); empty when nothing fits.
  struct Choice {
    enum Kind { kAlone, kShared, kPipeline };
    Kind kind = kAlone;
    size_t index = 0;
  };
  std::optional<Choice> chosen;
  /// With an availability question: `groups` holds each group's best size alone within the
  /// constraints (its DeviceGroup resized), `shared` the chosen plan when it spans groups.
  std::optional<DeviceChoice> devices;
  [[nodiscard]] const Throughput& chosenThroughput() const;
  /// Takes the plan as `chosen` if the objective prefers it.
  void consider(Choice::Kind kind, size_t index);
  [[nodiscard]] const Throughput& throughputOf(Choice choice) const;
};

/// Whether `a` serves the objective better than `b`. Under `cost`, a plan without a price cannot
/// be compared and loses to one with a price.
bool better(const Throughput& a, const Throughput& b, Objective objective);

/// The gradient all-reduce across `members` after each group's own reduction: a ring over the
/// groups, each group's reduced gradient spread over all its devices, so the smallest group's
/// devices carry it over the slowest link between members (a pair the file joins by no link
/// crosses the slower of the two groups' own inter-node links).
struct CrossSync {
  double seconds = 0;
  std::string link;           ///< "h100-a100 at 100 Gbit/s per device"
  double bytesPerSecond = 0;  ///< the slowest link's, per device
  double latencySeconds = 0;  ///< the largest latency between members
};
Expected<CrossSync> crossGroupSync(const cluster::ClusterGroups& groups,
                                   const std::vector<size_t>& members, double gradientBytes);

/// The availability question: searches each group alone at a ladder of sizes (powers of two up
/// to what it offers, what it offers, and the most the budget affords it), prices every
/// combination of sizes (across groups estimated from each group's speed alone plus the
/// synchronisation), plans the best few combinations across groups exactly, and picks by the
/// objective among those that meet the floor and the budget. Nothing meeting them is an outcome
/// (`chosen` empty), not an error.
Expected<GroupSearch> chooseDevices(const SearchRequest& request,
                                    const cluster::ClusterGroups& groups,
                                    const GroupSearchOptions& options);

/// Searches every group alone, then (with options.crossGroup) every set of two or more groups
/// that fit alone, sharing the batch (up to 6 such groups; with more, all of them at once).
/// Errors are the request's own (a model that does not load).
Expected<GroupSearch> searchGroups(const SearchRequest& request,
                                   const cluster::ClusterGroups& groups,
                                   const GroupSearchOptions& options);

}  // namespace autopar::planner
