#include "layout/redistribution.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "cluster/collective.h"
#include "layout/common_refinement.h"
#include "layout/redistribution_steps.h"

namespace autopar::layout {

namespace {

std::string rankSetDifference(const std::vector<int>& fromRanks, const std::vector<int>& toRanks) {
  const std::set<int> fromSet(fromRanks.begin(), fromRanks.end());
  const std::set<int> toSet(toRanks.begin(), toRanks.end());
  for (int rank : fromSet) {
    if (!toSet.contains(rank)) return "rank " + std::to_string(rank) + " is only in the source";
  }
  for (int rank : toSet) {
    if (!fromSet.contains(rank)) return "rank " + std::to_string(rank) + " is only in the target";
  }
  return "";
}

Status badElementBytes(int64_t elementBytes) {
  return Error{"redistribution: elementBytes must be positive, got " +
               std::to_string(elementBytes)};
}

/// Whether `padded` is `shape` rounded up on some dims to the next multiple of the cuts `layout`
/// makes there.
bool isPaddingOf(const ir::Shape& padded, const TensorLayout& layout, const ir::Shape& shape) {
  if (padded.size() != shape.size() || padded.size() != layout.dimAxes.size()) return false;
  for (size_t dim = 0; dim < padded.size(); ++dim) {
    if (padded[dim] == shape[dim]) continue;
    const int64_t cuts = layout.cutsOfDim(static_cast<int>(dim));
    if (padded[dim] < shape[dim] || padded[dim] - shape[dim] >= cuts) return false;
  }
  return true;
}

/// `from` and `to` on one shape. They may differ where one of them is a padded optimizer-parallel
/// storage layout (Megatron's distributed optimizer and DeepSpeed's ZeRO flatten parameters and
/// pad them to equal shards): both are then priced on the padded shape, the padding included.
Expected<std::pair<TensorLayout, TensorLayout>> onCommonShape(TensorLayout from, TensorLayout to) {
  if (from.shape == to.shape) return std::make_pair(std::move(from), std::move(to));
  if (isPaddingOf(from.shape, from, to.shape)) {
    to.shape = from.shape;
  } else if (isPaddingOf(to.shape, to, from.shape)) {
    from.shape = to.shape;
  } else {
    return Error{"redistribution: source shape " + ir::shapeToString(from.shape) +
                 " differs from target shape " + ir::shapeToString(to.shape)};
  }
  return std::make_pair(std::move(from), std::move(to));
}

Status checkInputs(const TensorLayout& from, const TensorLayout& to,
                   const cluster::Cluster& cluster, int64_t elementBytes) {
  if (auto ok = from.validate(); !ok) return ok.error().in("redistribution source layout");
  if (auto ok = to.validate(); !ok) return ok.error().in("redistribution target layout");
  const cluster::Mesh& fromMesh = from.deviceMatrix;
  const cluster::Mesh& toMesh = to.deviceMatrix;
  // Meshes over 0..n-1 (the common case) need no rank-by-rank comparison.
  const bool defaultRanks = fromMesh.hasDefaultRanks() && toMesh.hasDefaultRanks();
  if (defaultRanks && fromMesh.numDevices() != toMesh.numDevices()) {
    return Error{"redistribution: source and target cover different ranks: " +
                 std::to_string(fromMesh.numDevices()) + " and " +
                 std::to_string(toMesh.numDevices()) + " devices"};
  }
  if (defaultRanks) {
    if (fromMesh.numDevices() > cluster.numDevices) {
      return Error{"redistribution: rank " + std::to_string(cluster.numDevices) +
                   " is not in cluster '" + cluster.name + "' of " +
                   std::to_string(cluster.numDevices) + " devices"};
    }
    return elementBytes > 0 ? Status{} : badElementBytes(elementBytes);
  }
  if (std::string difference = rankSetDifference(fromMesh.ranks(), toMesh.ranks());
      !difference.empty()) {
    return Error{"redistribution: source and target cover different ranks: " + difference};
  }
  for (int rank : fromMesh.ranks()) {
    if (rank < 0 || rank >= cluster.numDevices) {
      return Error{"redistribution: rank " + std::to_string(rank) + " is not in cluster '" +
                   cluster.name + "' of " + std::to_string(cluster.numDevices) + " devices"};
    }
  }
  return elementBytes > 0 ? Status{} : badElementBytes(elementBytes);
}

/// `layout` on its own matrix with axes of size 1 dropped, so no step runs over one device. A
/// matrix always refines itself: its own suffix products form a chain.
TensorLayout withoutUnitAxes(const TensorLayout& layout) {
  const auto self = commonRefinement(layout.deviceMatrix, layout.deviceMatrix);
  return refineLayout(layout, self->matrix, self->sourceAxes);
}

std::vector<RedistStep> planSteps(const TensorLayout& from, const TensorLayout& to,
                                  const RedistributionOptions& options) {
  if (auto common = commonRefinement(from.deviceMatrix, to.deviceMatrix)) {
    return stepsOnCommonMatrix(refineLayout(from, common->matrix, common->sourceAxes),
                               refineLayout(to, common->matrix, common->targetAxes),
                               options.enableAllToAll);
  }
  return stepsViaReplication(withoutUnitAxes(from), withoutUnitAxes(to));
}

/// Prices `step` given the elements each device holds before it, and returns the elements it
/// holds after. Bytes sent per device follow the bandwidth-optimal (ring) volumes, as in NCCL's
/// performance notes (nccl-tests doc/PERFORMANCE.md): for a group of p devices, all-gather and
/// reduce-scatter send (p-1)/p of the full buffer, all-reduce 2(p-1)/p of it, all-to-all (p-1)/p
/// of each device's buffer.
int64_t priceStep(RedistStep& step, int64_t elements, const cluster::Cluster& cluster,
                  int64_t elementBytes, double perRankCopySeconds) {
  const int64_t groupSize = step.matrix.axisSize(step.axis);
  const int64_t shardBytes = elements * elementBytes;
  const int axes[] = {step.axis};
  // Every group along the axis runs the same collective at once; they are priced alike, so the
  // group through device 0 stands for all of them.
  const std::vector<int> group = step.matrix.group(0, axes);
  auto price = [&](cluster::Collective collective, int64_t collectiveBytes, int64_t sentBytes) {
    const cluster::CollectiveCost cost =
        cluster::collectiveCost(cluster, collective, group, collectiveBytes);
    step.seconds = cost.seconds;
    step.collectiveBytes = collectiveBytes;
    step.algorithm = std::string(cluster::algorithmName(cost.algorithm));
    step.bytesPerDevice = sentBytes;
  };
  switch (step.kind) {
    case PrimitiveKind::kSplit:
      return elements / groupSize;
    case PrimitiveKind::kMakePartial:
      return elements;
    case PrimitiveKind::kAllGather:  // priced on the gathered (output) size
      price(cluster::Collective::kAllGather, shardBytes * groupSize, shardBytes * (groupSize - 1));
      step.seconds += static_cast<double>(groupSize) * perRankCopySeconds;
      return elements * groupSize;
    case PrimitiveKind::kReduceScatter:  // priced on the unscattered (input) size
      price(cluster::Collective::kReduceScatter, shardBytes,
            shardBytes / groupSize * (groupSize - 1));
      step.seconds += static_cast<double>(groupSize) * perRankCopySeconds;
      return elements / groupSize;
    case PrimitiveKind::kAllReduce:
      price(cluster::Collective::kAllReduce, shardBytes,
            2 * shardBytes * (groupSize - 1) / groupSize);
      return elements;
    case PrimitiveKind::kAllToAll: {
      const int64_t sentBytes = shardBytes / groupSize * (groupSize - 1);
      price(cluster::Collective::kAllToAll, sentBytes, sentBytes);
      return elements;
    }
  }
  return elements;
}

}  // namespace

std::string_view primitiveName(PrimitiveKind kind) {
  switch (kind) {
    case PrimitiveKind::kSplit:
      return "split";
    case PrimitiveKind::kAllGather:
      return "all_gather";
    case PrimitiveKind::kAllToAll:
      return "all_to_all";
    case PrimitiveKind::kReduceScatter:
      return "reduce_scatter";
    case PrimitiveKind::kAllReduce:
      return "all_reduce";
    case PrimitiveKind::kMakePartial:
      return "make_partial";
  }
  return "unknown";
}

std::string RedistStep::toString() const {
  std::string out(primitiveName(kind));
  if (kind == PrimitiveKind::kAllToAll) {
    out += " dim " + std::to_string(dim) + "->" + std::to_string(splitDim);
  } else if (dim >= 0) {
    out += " dim " + std::to_string(dim);
  }
  const std::vector<int64_t>& shape = matrix.shape();
  const auto fromRight = static_cast<int64_t>(shape.size()) - 1 - axis;
  out += " axis " + std::to_string(fromRight) + " (" +
         std::to_string(shape.at(static_cast<size_t>(axis))) + " devices) of " +
         ir::shapeToString(shape);
  if (algorithm.empty()) return out;
  char secondsText[32];
  std::snprintf(secondsText, sizeof(secondsText), "%.3g", seconds);
  return out + " (" + std::to_string(bytesPerDevice) + " bytes/device, " + secondsText + " s, " +
         algorithm + ")";
}

Expected<Redistribution> redistribute(const TensorLayout& source, const TensorLayout& target,
                                      const cluster::Cluster& cluster, int64_t elementBytes,
                                      const RedistributionOptions& options) {
  if (auto ok = source.validate(); !ok) return ok.error().in("redistribution source layout");
  if (auto ok = target.validate(); !ok) return ok.error().in("redistribution target layout");
  auto common = onCommonShape(source, target);
  if (!common) return common.error();
  const auto& [from, to] = *common;
  if (auto ok = checkInputs(from, to, cluster, elementBytes); !ok) return ok.error();
  Redistribution result;
  result.steps = planSteps(from, to, options);
  int64_t elements = from.sliceElements();
  for (RedistStep& step : result.steps) {
    elements = priceStep(step, elements, cluster, elementBytes, options.perRankCopySeconds);
    result.seconds += step.seconds;
    result.bytesPerDevice += step.bytesPerDevice;
  }
  return result;
}

double collectiveSeconds(const RedistStep& step, int64_t collectiveBytes,
                         const cluster::Cluster& cluster) {
  cluster::Collective collective;
  switch (step.kind) {
    case PrimitiveKind::kAllGather:
      collective = cluster::Collective::kAllGather;
      break;
    case PrimitiveKind::kReduceScatter:
      collective = cluster::Collective::kReduceScatter;
      break;
    case PrimitiveKind::kAllReduce:
      collective = cluster::Collective::kAllReduce;
      break;
    case PrimitiveKind::kAllToAll:
      collective = cluster::Collective::kAllToAll;
      break;
    default:
      return 0;
  }
  const int axes[] = {step.axis};
  return cluster::collectiveCost(cluster, collective, step.matrix.group(0, axes), collectiveBytes)
      .seconds;
}

}  // namespace autopar::layout
