#pragma once
/// \file
/// `autopar plan --dp-shares`: data-parallel replicas that train uneven shares of the batch, as a
/// plan across device groups gives a faster kind more samples (planner/configuration/
/// group_search.h). The plan keeps one sharding; each micro-batch's samples are split among the
/// replicas in proportion to their shares, which the runtime runs (runtime/batch_shares.h) and
/// `autopar check` proves against the unsharded model. The estimate prices every replica at the
/// largest share: on one kind of device that replica sets the step, and its activations the peak.
///   --devices 4 --tp 2 --micro-batches 2 --dp-shares 6,2
///   -> replicas of 3 and 1 samples a micro-batch; the graph holds 4; priced at 3 a replica

#include <cstdint>
#include <vector>

#include "cluster/cluster.h"
#include "plan/plan.h"
#include "planner/plan_evaluation.h"
#include "util/expected.h"

namespace autopar::planner {

struct SharedBatch {
  std::vector<int64_t> shares;  ///< per replica, samples a step
  int64_t samples = 0;          ///< a step's: the shares' sum
  int64_t graphBatch = 0;       ///< every replica's share of one micro-batch
  int64_t widest = 0;           ///< the largest share of one micro-batch
};

/// Checks `options.training.dpShares` against the plan's degrees (one share per replica of a
/// Megatron-style annotation, --tp, filling each stage; each a multiple of the micro-batches)
/// and sets the model's per-replica micro-batch to the widest share, which the estimate prices.
/// No shares: none. Errors name --dp-shares.
Expected<std::optional<SharedBatch>> applyShares(PlanOptions& options,
                                                 const cluster::Cluster& cluster);

/// Records the shares in `plan`, with the fingerprint of the graph the runtime builds: each
/// micro-batch holding every replica's share.
Status recordShares(plan::Plan& plan, const SharedBatch& shared, const PlanOptions& options,
                    const cluster::Cluster& cluster);

}  // namespace autopar::planner
