#include "cost/fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace autopar::cost {

namespace {

bool fusionConfigured(const std::vector<ParameterCollective>& collectives,
                      const FusionOptions& options) {
  if (options.bucketing != Bucketing::kNone) return true;
  return std::any_of(collectives.begin(), collectives.end(),
                     [](const ParameterCollective& c) { return c.fusionId.has_value(); });
}

/// The group of each collective, by name, in the order groups are first seen.
std::vector<std::string> groupNames(const std::vector<ParameterCollective>& collectives,
                                    const FusionOptions& options, bool byFusionId) {
  std::vector<std::string> names(collectives.size());
  std::map<int, int64_t> bucketFill;  // stage -> bytes in its open bucket
  std::map<int, int> bucketIndex;
  // Size buckets fill in the order gradients become ready (reverse graph order).
  std::vector<size_t> order(collectives.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return collectives[a].readyFraction < collectives[b].readyFraction;
  });
  for (size_t i : order) {
    const ParameterCollective& c = collectives[i];
    if (byFusionId) {
      names[i] = c.fusionId ? fmt::format("fusion {}", *c.fusionId) : "parameter " + c.parameter;
    } else if (options.bucketing == Bucketing::kByLayer) {
      names[i] = "block " + (c.block.empty() ? std::string("(untagged)") : c.block);
    } else {
      // A bucket closes once it holds the bucket size or more (Megatron-Core's
      // _ParamAndGradBuffer; PyTorch DDP's buckets likewise take the parameter that overflows
      // them), so a parameter larger than the size shares its bucket with those before it.
      int64_t& fill = bucketFill[c.stage];
      int& index = bucketIndex[c.stage];
      names[i] = fmt::format("bucket {}", index);
      fill += c.redistribution.bytesPerDevice;
      if (fill >= options.bucketBytes) {
        ++index;
        fill = 0;
      }
    }
  }
  return names;
}

/// Key of a fusable step: kind, device-matrix shape and axis.
using StepKey = std::tuple<int, std::vector<int64_t>, int, bool>;

void fuseGroup(FusionGroup& group, const std::vector<const ParameterCollective*>& members,
               const cluster::Cluster& cluster) {
  std::map<StepKey, std::pair<const layout::RedistStep*, size_t>> index;
  for (const ParameterCollective* member : members) {
    group.parameters.push_back(member->parameter);
    if (member->gradient)
      group.readyFraction = std::max(group.readyFraction, member->readyFraction);
    for (const layout::RedistStep& step : member->redistribution.steps) {
      if (step.collectiveBytes == 0) continue;
      StepKey key{static_cast<int>(step.kind), step.matrix.shape(), step.axis, member->gradient};
      auto [it, added] = index.emplace(key, std::make_pair(&step, group.collectives.size()));
      if (added) {
        group.collectives.push_back(
            {std::string(layout::primitiveName(step.kind)), member->gradient, 0, 0, 0});
      }
      FusedCollective& fused = group.collectives[it->second.second];
      fused.bytes += step.collectiveBytes;
      fused.unfusedSeconds += step.seconds;
    }
  }
  for (const auto& [key, entry] : index) {
    FusedCollective& fused = group.collectives[entry.second];
    fused.seconds = layout::collectiveSeconds(*entry.first, fused.bytes, cluster);
  }
  std::sort(group.parameters.begin(), group.parameters.end());
  group.parameters.erase(std::unique(group.parameters.begin(), group.parameters.end()),
                         group.parameters.end());
}

/// Gradient collectives run one at a time from when their group is ready; what runs past the
/// end of the backward is exposed.
double exposedAfterBackward(std::vector<std::pair<double, double>> readyAndSeconds,
                            double backwardSeconds) {
  std::sort(readyAndSeconds.begin(), readyAndSeconds.end());
  double end = 0;
  for (const auto& [ready, seconds] : readyAndSeconds) {
    end = std::max(end, ready * backwardSeconds) + seconds;
  }
  return std::max(0.0, end - backwardSeconds);
}

}  // namespace

FusionResult fuseCollectives(const std::vector<ParameterCollective>& collectives,
                             const FusionOptions& options,
                             const std::vector<double>& backwardSeconds,
                             const cluster::Cluster& cluster) {
  const size_t stages = backwardSeconds.size();
  FusionResult result;
  result.gradientSyncSeconds.assign(stages, 0.0);
  result.exposedGradientSyncSeconds.assign(stages, 0.0);
  result.gatherSeconds.assign(stages, 0.0);
  result.gatherFusionRatio.assign(stages, 1.0);
  if (!fusionConfigured(collectives, options)) {
    for (const ParameterCollective& c : collectives) {
      auto& bucket = c.gradient ? result.gradientSyncSeconds : result.gatherSeconds;
      bucket[static_cast<size_t>(c.stage)] += c.redistribution.seconds;
    }
    result.exposedGradientSyncSeconds = result.gradientSyncSeconds;
    return result;
  }
  const bool byFusionId = std::any_of(collectives.begin(), collectives.end(),
                                      [](const auto& c) { return c.fusionId.has_value(); });
  const std::vector<std::string> names = groupNames(collectives, options, byFusionId);
  std::map<std::pair<int, std::string>, std::vector<const ParameterCollective*>> members;
  std::vector<std::pair<int, std::string>> order;
  for (size_t i = 0; i < collectives.size(); ++i) {
    auto key = std::make_pair(collectives[i].stage, names[i]);
    if (!members.contains(key)) order.push_back(key);
    members[key].push_back(&collectives[i]);
  }
  std::vector<std::vector<std::pair<double, double>>> ready(stages);
  std::vector<double> unfusedGathers(stages, 0.0);
  for (const auto& key : order) {
    FusionGroup group{key.second, key.first, {}, {}, 0};
    fuseGroup(group, members[key], cluster);
    for (const FusedCollective& fused : group.collectives) {
      const auto stage = static_cast<size_t>(group.stage);
      if (fused.gradient) {
        result.gradientSyncSeconds[stage] += fused.seconds;
        ready[stage].emplace_back(group.readyFraction, fused.seconds);
      } else {
        result.gatherSeconds[stage] += fused.seconds;
        unfusedGathers[stage] += fused.unfusedSeconds;
      }
    }
    result.groups.push_back(std::move(group));
  }
  for (size_t s = 0; s < stages; ++s) {
    result.exposedGradientSyncSeconds[s] = exposedAfterBackward(ready[s], backwardSeconds[s]);
    if (unfusedGathers[s] > 0) {
      result.gatherFusionRatio[s] = result.gatherSeconds[s] / unfusedGathers[s];
    }
  }
  return result;
}

}  // namespace autopar::cost
