#pragma once
/// \file
/// The common refinement of two device matrices over the same ranks, in the same row-major order.
///
/// A matrix's axes partition a rank's index into mixed-radix digits; its suffix products
/// (product of the axes from a to the last) mark where each axis starts. Two matrices share a
/// refinement when the union of their suffix products forms a divisibility chain; the refined axes
/// are the ratios of consecutive chain members.
///
/// Example: [4,2] and [2,4] over ranks 0..7 have suffix products {8,2,1} and {8,4,1}; the union
/// {8,4,2,1} is a chain, so both refine to [2,2,2]. [4,2]'s axis 0 becomes refined axes {0,1}
/// and its axis 1 becomes {2}; [2,4]'s axis 0 becomes {0} and its axis 1 becomes {1,2}.
/// [2,3] and [3,2] have {6,3,1} and {6,2,1}: 3 does not divide by 2, so there is none.

#include <optional>
#include <vector>

#include "layout/device_matrix.h"
#include "layout/tensor_layout.h"

namespace autopar::layout {

/// Maps each axis of an original matrix to the refined axes it splits into, major first. An axis
/// of size 1 maps to an empty list.
using AxisRefinement = std::vector<std::vector<int>>;

struct CommonRefinement {
  DeviceMatrix matrix;        ///< refines both; has no axis of size 1
  AxisRefinement sourceAxes;  ///< for each axis of the first matrix
  AxisRefinement targetAxes;  ///< for each axis of the second matrix
};

/// The coarsest matrix refining both `source` and `target`, or nullopt when their ranks are not
/// the same sequence or their suffix products do not form a divisibility chain.
std::optional<CommonRefinement> commonRefinement(const DeviceMatrix& source,
                                                 const DeviceMatrix& target);

/// `layout` re-expressed on `refined`, each original axis replaced by its refined axes. Example:
/// map [1,-1] on [4,2] with axes {{0,1},{2}} becomes dimAxes {{0,1},{}} on [2,2,2].
TensorLayout refineLayout(const TensorLayout& layout, const DeviceMatrix& refined,
                          const AxisRefinement& axes);

}  // namespace autopar::layout
