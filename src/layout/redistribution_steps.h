#pragma once
/// \file
/// The primitive sequence of a redistribution, before costs: which collective or local step runs
/// over which axis of which matrix. redistribution.h documents the algorithm; redistribute()
/// prices these steps.

#include <vector>

#include "layout/redistribution.h"
#include "layout/tensor_layout.h"

namespace autopar::layout {

/// Steps turning `from` into `to`, both on the same matrix (no axis of size 1), in the documented
/// order: all-reduce dropped partials, gather axes beyond each dim's common prefix (minor first,
/// as all-to-all when `enableAllToAll` and the axis is the next target axis of a dim that is ready
/// for it), append the target's remaining axes (split, or reduce-scatter for a partial axis),
/// make the target's new partial axes.
///
/// Example on [2,4]: map [1,-1] to map [-1,0] gives all_gather(dim 0, axis 0) then
/// split(dim 1, axis 1); with all-to-all enabled, map [1,-1] to map [-1,1] gives one
/// all_to_all(dim 0 -> dim 1, axis 0).
std::vector<RedistStep> stepsOnCommonMatrix(const TensorLayout& from, const TensorLayout& to,
                                            bool enableAllToAll);

/// The fallback when no common refinement exists: on `from`'s matrix all-reduce every partial
/// axis and all-gather every dim (minor axis first), then on `to`'s matrix split every dim (major
/// axis first) and make the target's partial axes.
std::vector<RedistStep> stepsViaReplication(const TensorLayout& from, const TensorLayout& to);

}  // namespace autopar::layout
