// The batch split of a plan across device groups (group_search.h, shareBatch).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "planner/configuration/group_search.h"

namespace autopar::planner {

namespace {

constexpr double kSecondsPerHour = 3600;
constexpr double kNever = std::numeric_limits<double>::infinity();
/// The finest split: the batch moves between groups in about this many quanta.
constexpr int64_t kQuantaPerBatch = 32;

/// The largest divisor of `batch` that cuts it into at least min(kQuantaPerBatch, batch) quanta.
int64_t shareQuantum(int64_t batch) {
  const int64_t quanta = std::min(kQuantaPerBatch, batch);
  for (int64_t quantum = batch / quanta; quantum > 1; --quantum) {
    if (batch % quantum == 0) return quantum;
  }
  return 1;
}

/// Each group's search on a share of the batch, run once: the whole batch's are the groups'
/// searches alone.
class ShareSearches {
 public:
  ShareSearches(const SearchRequest& request, const cluster::ClusterGroups& groups,
                const std::vector<GroupOutcome>& alone)
      : request_(request), groups_(groups) {
    for (size_t i = 0; i < alone.size(); ++i)
      done_.emplace(std::pair{i, alone[i].samples}, alone[i]);
  }

  /// The group's search on `samples` (without a winner where no shape or nothing fits).
  Expected<const GroupOutcome*> at(size_t group, int64_t samples) {
    const std::pair key{group, samples};
    if (auto known = done_.find(key); known != done_.end()) return &known->second;
    auto outcome = searchGroup(request_, groups_.groups[group], samples);
    if (!outcome) {
      // The group searched on the whole batch, so its model loads: a share no shape fits (too
      // few samples for its devices) is a share without a winner.
      GroupOutcome none;
      none.group = groups_.groups[group];
      none.samples = samples;
      none.unmet = outcome.error().message;
      return &done_.emplace(key, std::move(none)).first->second;
    }
    return &done_.emplace(key, std::move(*outcome)).first->second;
  }

  /// The group's step on `samples`; kNever where nothing fits.
  Expected<double> seconds(size_t group, int64_t samples) {
    auto outcome = at(group, samples);
    if (!outcome) return outcome.error();
    return (*outcome)->found ? (*outcome)->throughput.stepSeconds : kNever;
  }

 private:
  const SearchRequest& request_;
  const cluster::ClusterGroups& groups_;
  std::map<std::pair<size_t, int64_t>, GroupOutcome> done_;
};

/// Shares in proportion to `speeds`, each a multiple of `quantum` and at least one quantum, the
/// remainder's quanta to the largest fractions (Hamilton's rounding).
std::vector<int64_t> proportionalShares(const std::vector<double>& speeds, int64_t batch,
                                        int64_t quantum) {
  const double total = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  const int64_t quanta = batch / quantum;
  std::vector<int64_t> shares(speeds.size());
  std::vector<std::pair<double, size_t>> fractions;
  int64_t given = 0;
  for (size_t i = 0; i < speeds.size(); ++i) {
    const double ideal = static_cast<double>(quanta) * speeds[i] / total;
    shares[i] = std::max<int64_t>(1, static_cast<int64_t>(std::floor(ideal)));
    fractions.emplace_back(ideal - std::floor(ideal), i);
    given += shares[i];
  }
  std::sort(fractions.begin(), fractions.end(), std::greater<>());
  for (size_t k = 0; given < quanta; k = (k + 1) % fractions.size(), ++given) {
    ++shares[fractions[k].second];
  }
  // The one-quantum floor can overshoot: take back from the largest shares.
  while (given > quanta) {
    --*std::max_element(shares.begin(), shares.end());
    --given;
  }
  for (int64_t& share : shares) share *= quantum;
  return shares;
}

}  // namespace

Expected<CrossSync> crossGroupSync(const cluster::ClusterGroups& groups,
                                   const std::vector<size_t>& members, double gradientBytes) {
  double bytesPerSecond = kNever;
  double latency = 0;
  int smallest = std::numeric_limits<int>::max();
  std::string link;
  for (size_t a = 0; a < members.size(); ++a) {
    const cluster::DeviceGroup& first = groups.groups[members[a]];
    smallest = std::min(smallest, first.devices());
    for (size_t b = a + 1; b < members.size(); ++b) {
      const cluster::DeviceGroup& second = groups.groups[members[b]];
      double pairBytes = 0;
      double pairLatency = 0;
      const cluster::GroupLink* given = groups.linkBetween(first.name, second.name);
      if (given != nullptr) {
        pairBytes = given->bytesPerSecond;
        pairLatency = given->latencySeconds;
      } else {
        pairBytes = kNever;
        for (const cluster::DeviceGroup* group : {&first, &second}) {
          auto cluster = groups.clusterOf(*group);
          if (!cluster) return cluster.error();
          pairBytes = std::min(pairBytes, cluster->levels.back().bytesPerSecond);
          pairLatency = std::max(pairLatency, cluster->levels.back().latencySeconds);
        }
      }
      if (pairBytes < bytesPerSecond) {
        bytesPerSecond = pairBytes;
        link = fmt::format(
            "{}-{} at {:g} Gbit/s per device{}", first.name, second.name, pairBytes * 8 / 1e9,
            given == nullptr ? " (no link given: the slower group's inter-node link)" : "");
      }
      latency = std::max(latency, pairLatency);
    }
  }
  const double k = static_cast<double>(members.size());
  const double ring = 2 * (k - 1) / k * gradientBytes / (smallest * bytesPerSecond);
  return CrossSync{ring + 2 * (k - 1) * latency, link, bytesPerSecond, latency};
}

double dollarsPerMillionTokens(const Throughput& throughput) {
  if (throughput.tokensPerSecond <= 0) return 0;
  return throughput.dollarsPerHour / (throughput.tokensPerSecond * kSecondsPerHour) * 1e6;
}

Throughput throughputOf(double stepSeconds, double tokensPerStep,
                        const std::vector<const cluster::DeviceGroup*>& groups) {
  Throughput throughput;
  throughput.stepSeconds = stepSeconds;
  throughput.tokensPerSecond = tokensPerStep / stepSeconds;
  bool priced = true;
  for (const cluster::DeviceGroup* group : groups) {
    throughput.dollarsPerHour += group->pricePerDeviceHour * group->devices();
    priced = priced && group->pricePerDeviceHour > 0;
  }
  throughput.dollarsPerMillionTokens = priced ? dollarsPerMillionTokens(throughput) : 0;
  return throughput;
}

Expected<std::optional<SharedPlan>> shareBatch(const SearchRequest& request,
                                               const cluster::ClusterGroups& groups,
                                               const std::vector<GroupOutcome>& alone,
                                               const std::vector<size_t>& members) {
  const int64_t batch = request.base.gbs;
  const int64_t quantum = shareQuantum(batch);
  if (static_cast<int64_t>(members.size()) > batch / quantum) return std::optional<SharedPlan>{};
  std::vector<double> speeds;
  for (size_t member : members) speeds.push_back(alone[member].throughput.tokensPerSecond);
  std::vector<int64_t> shares = proportionalShares(speeds, batch, quantum);

  ShareSearches searches(request, groups, alone);
  std::vector<double> seconds(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    auto step = searches.seconds(members[i], shares[i]);
    if (!step) return step.error();
    seconds[i] = *step;
  }
  // Move a quantum from the slowest group to the one it helps most while the step shortens;
  // every move lowers the slowest step, so this ends within batch / quantum moves per group.
  for (;;) {
    const size_t slowest = std::max_element(seconds.begin(), seconds.end()) - seconds.begin();
    if (shares[slowest] == quantum) break;
    auto lighter = searches.seconds(members[slowest], shares[slowest] - quantum);
    if (!lighter) return lighter.error();
    double bestStep = seconds[slowest];
    std::optional<size_t> bestTaker;
    double bestTakerSeconds = 0;
    for (size_t j = 0; j < members.size(); ++j) {
      if (j == slowest) continue;
      auto heavier = searches.seconds(members[j], shares[j] + quantum);
      if (!heavier) return heavier.error();
      double step = std::max(*lighter, *heavier);
      for (size_t other = 0; other < members.size(); ++other) {
        if (other != slowest && other != j) step = std::max(step, seconds[other]);
      }
      if (step < bestStep) {
        bestStep = step;
        bestTaker = j;
        bestTakerSeconds = *heavier;
      }
    }
    if (!bestTaker) break;
    shares[slowest] -= quantum;
    shares[*bestTaker] += quantum;
    seconds[slowest] = *lighter;
    seconds[*bestTaker] = bestTakerSeconds;
  }
  const double slowestSeconds = *std::max_element(seconds.begin(), seconds.end());
  if (slowestSeconds == kNever) return std::optional<SharedPlan>{};

  SharedPlan plan;
  std::vector<const cluster::DeviceGroup*> used;
  for (size_t i = 0; i < members.size(); ++i) {
    auto outcome = searches.at(members[i], shares[i]);
    if (!outcome) return outcome.error();
    plan.shares.push_back(**outcome);
    used.push_back(&groups.groups[members[i]]);
  }
  const ConfigurationSearch& first = *plan.shares.front().found;
  auto sync = crossGroupSync(groups, members, crossGroupGradientBytes(first));
  if (!sync) return sync.error();
  plan.slowestGroupSeconds = slowestSeconds;
  plan.syncSeconds = sync->seconds;
  plan.syncLink = sync->link;
  plan.throughput = throughputOf(slowestSeconds + sync->seconds,
                                 static_cast<double>(batch * first.sequence), used);
  return std::optional<SharedPlan>{std::move(plan)};
}

}  // namespace autopar::planner
