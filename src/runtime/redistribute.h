#pragma once
/// \file
/// A redistribution run on this rank's block (internal to the runtime; includes LibTorch): the
/// steps layout::redistribute plans, each a collective of runtime/process_groups.h whose backward
/// is its transpose.

#include <torch/torch.h>

#include <vector>

#include "cluster/cluster.h"
#include "layout/tensor_layout.h"
#include "runtime/batch_shares.h"
#include "runtime/process_groups.h"
#include "util/expected.h"

namespace autopar::runtime {

/// Brings `block`, held in `from`, into `to` (the same tensor over the same ranks). With
/// `copies` (the ranks an op then uses the value on as replicated copies, sorted), a final
/// all-gather over exactly those ranks becomes one whose backward reduce-scatters, and `*copies`
/// is cleared: the copies' gradients are summed there. The cluster prices the planned steps.
/// Under uneven data-parallel shares a step that moves data between replicas is refused.
Expected<at::Tensor> redistributeBlock(ProcessGroups& groups, const cluster::Cluster& cluster,
                                       const BatchShares& shares, at::Tensor block,
                                       const layout::TensorLayout& from,
                                       const layout::TensorLayout& to,
                                       std::vector<int>* copies = nullptr);

}  // namespace autopar::runtime
