#pragma once
/// \file
/// Where each parameter is stored and what its states cost: seed 004's optimizer parallel and
/// seed 001's host placement.
///
/// A parameter is used in the layout its first consumer needs. With optimizer parallel on
/// (auto/semi-auto parallel), a parameter replicated over some device-matrix axes is stored as a
/// minimal slice instead: its first dimension whose slice divides by the replica count is split
/// further over those axes. Its forward use then all-gathers it and its gradient reduce-scatters
/// into the slice; both are ordinary redistributions of the storage layout. Parameters whose
/// slice is at most parallel_optimizer_threshold KB stay whole; a parameter's own
/// parallel_optimizer flag overrides the threshold (false: never shard, true: shard whatever its
/// size). In group-update mode (data parallel) storage is not sliced: each device updates whole
/// parameters and broadcasts them. Megatron-LM's distributed optimizer is group update with the
/// gradients reduce-scattered into the slice and the updated slices all-gathered.

#include <cstdint>
#include <string>
#include <vector>

#include "cost/memory.h"
#include "cost/training.h"
#include "ir/graph.h"
#include "layout/tensor_layout.h"
#include "rules/sharded_op.h"
#include "util/expected.h"

namespace autopar::cost {

struct ParameterPlacement {
  ir::TensorId tensor = -1;
  ir::OpId firstConsumer = ir::kNoOp;
  layout::TensorLayout use;      ///< the first consumer's input layout
  layout::TensorLayout storage;  ///< `use`, or its optimizer-parallel slice
  /// Where its gradient is reduced to: `storage`, or under the distributed optimizer (group
  /// update) the optimizer-parallel slice, reduce-scattered instead of all-reduced.
  layout::TensorLayout gradientTarget;
  int64_t replicas = 1;         ///< devices holding the same slice of `use`
  int64_t optimizerShards = 1;  ///< the states' share is 1/optimizerShards
  int shardDim = -1;            ///< dim split further by optimizer parallel, or -1
  bool onHost = false;
  /// Gather's manual_split: the largest part's rows over the even split's (1 without one).
  double unevenScale = 1.0;
  std::string note;  ///< why it is not sharded, when optimizer parallel is on
};

/// Places every used parameter of `graph`, in parameters() order.
std::vector<ParameterPlacement> placeParameters(const ir::Graph& graph,
                                                const std::vector<rules::ShardedOp>& sharded,
                                                const OptimizerParallelOptions& options);

/// Checks every Gather's manual_split against its strategy: one part per cut of the table's rows.
/// Example error: "op 'lookup': attrs.manual_split has 4 parts but its strategy cuts dim 0 of
/// input 0 into 2".
Status checkManualSplits(const ir::Graph& graph, const std::vector<rules::ShardedOp>& sharded);

/// Per-device state bytes of one placed parameter: weight, gradient and optimizer states.
ParameterStateBytes placedStateBytes(const ir::Graph& graph, const ParameterPlacement& placement,
                                     const OptimizerParallelOptions& options,
                                     const OptimizerSpec& optimizer);

}  // namespace autopar::cost
