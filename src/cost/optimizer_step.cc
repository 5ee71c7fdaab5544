#include "cost/optimizer_step.h"

#include "cluster/collective.h"

namespace autopar::cost {

double optimizerBytesPerElement(ir::DType weight, const OptimizerSpec& optimizer) {
  const double weightBytes = static_cast<double>(ir::dtypeBytes(weight));
  const auto gradientBytes =
      static_cast<double>(optimizer.accumulatorBytes(ir::dtypeBytes(weight)));
  const bool lowPrecision = weight != ir::DType::kF32;
  double bytes = 0;
  if (!optimizer.fp32Gradients && lowPrecision) bytes += gradientBytes + 4;  // to main grads
  if (weight == ir::DType::kF16) bytes += 8;                                 // unscale, inf check
  bytes += 4;                                                                // gradient norm
  // Adam reads the fp32 gradient and reads and writes its state: the moments and the master
  // copy (an fp32 weight is its own). Without a full master copy (OptimizerState) the same
  // kernel updates the 16-bit weight; with one, a later pass copies the master into it.
  const OptimizerStateBytes state = optimizerStateBytes(weight, optimizer.state);
  double updated = 2.0 * static_cast<double>(state.moment) +
                   (lowPrecision ? static_cast<double>(state.master) : 4.0);
  const bool copiesBack = lowPrecision && state.master == 4;
  if (lowPrecision && !copiesBack) updated += weightBytes;
  bytes += 4 + 2 * updated;                  // Adam
  if (copiesBack) bytes += 4 + weightBytes;  // copy back
  bytes += gradientBytes;                    // zero the gradients
  return bytes;
}

double broadcastSeconds(const cluster::Cluster& cluster, const ParameterPlacement& placement,
                        int64_t weightBytes) {
  const auto ranks = placement.use.deviceMatrix.ranks();
  const std::vector<int> group(ranks.begin(), ranks.begin() + placement.optimizerShards);
  return cluster::collectiveCost(cluster, cluster::Collective::kBroadcast, group, weightBytes)
      .seconds;
}

Status BufferGather::add(int stage, const ParameterPlacement& placement, int64_t elementBytes) {
  auto gather = layout::redistribute(placement.gradientTarget, placement.use, cluster_,
                                     elementBytes, options_);
  if (!gather) return gather.error();
  for (const layout::RedistStep& step : gather->steps) {
    if (step.collectiveBytes == 0) continue;
    Key key{stage, static_cast<int>(step.kind), step.matrix.shape(), step.axis};
    auto it = merged_.emplace(key, std::make_pair(step, int64_t{0})).first;
    it->second.second += step.collectiveBytes;
  }
  return {};
}

std::vector<double> BufferGather::secondsPerStage(size_t stages) const {
  std::vector<double> seconds(stages, 0.0);
  for (const auto& [key, entry] : merged_) {
    seconds[static_cast<size_t>(std::get<0>(key))] +=
        layout::collectiveSeconds(entry.first, entry.second, cluster_);
  }
  return seconds;
}

}  // namespace autopar::cost
