#pragma once
/// \file
/// What `autopar layout` and `autopar redistribute` print: an op's device matrix, tensor maps and
/// per-device slices (seed 002's notation, maps counted from the right), and the primitives that
/// move a tensor between two layouts with their cost. Text for people, JSON for scripts.

#include <string>

#include "ir/dtype.h"
#include "layout/redistribution.h"
#include "rules/sharded_op.h"

namespace autopar::exporters {

/// The sharded op's device matrix over devices 0 .. devices-1, then per input and the output its
/// shape, tensor map and which devices hold which slice:
///   device matrix [2,4] over devices 0..7
///   input 0 shape [64,32] tensor map [1,-1]
///     slice [0:32, 0:32] on devices {0,1,2,3}
std::string formatLayout(const rules::ShardedOp& sharded, int64_t devices, bool json);

/// The steps of `plan` from `from` to `to` for elements of `dtype`, their seconds and bytes sent
/// per device on the cluster named `clusterName`. The text counts device-matrix axes from the
/// right, as tensor maps do; the JSON's `axis` indexes the step's device matrix from the left.
std::string formatRedistribution(const layout::Redistribution& plan,
                                 const layout::TensorLayout& from, const layout::TensorLayout& to,
                                 ir::DType dtype, const std::string& clusterName, bool json);

}  // namespace autopar::exporters
