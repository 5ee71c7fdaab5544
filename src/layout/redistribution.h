#pragma once
/// \file
/// Redistribution: the primitives that turn a tensor held in one layout into another layout of the
/// same tensor over the same devices, with their cost.
///
/// Both layouts are first expressed on one common device matrix that refines both (e.g. [4,2] and
/// [2,4] over 8 devices both refine to [2,2,2]). Then, on that matrix:
///   1. partial axes the target does not keep and does not split a dim over: all-reduce; with
///      all-to-all enabled, a partial axis the target splits a dim over next (the dim's axes a
///      prefix of the target's): reduce-scatter, before anything moves;
///   2. for each dim, axes beyond the longest common prefix of the source's and the target's axis
///      lists are all-gathered, minor first (an all-to-all when allowed and the axis moves straight
///      to the next position of another dim);
///   3. the target's remaining axes are appended by local splits, or by reduce-scatter for an axis
///      that still holds partial sums;
///   4. partial axes the target has and the source lacks are made by keeping the value on
///      coordinate 0 and zeroing the rest (local).
/// When no common refinement exists (e.g. [2,3] and [3,2]), the tensor is gathered to full
/// replication on the source matrix and then split on the target's.
///
/// Example: [64,32] from map [1,-1] on [2,4] to map [-1,0] on [2,4] (row blocks to column blocks,
/// 8 devices): all-gather dim 0 over axis 0 (2 devices), then split dim 1 over axis 1.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "layout/tensor_layout.h"
#include "util/expected.h"

namespace autopar::layout {

enum class PrimitiveKind {
  kSplit,          ///< local: keep part coordinate(axis) of `dim`, appending `axis` to dim's list
  kAllGather,      ///< concat along `dim` over the group along `axis` (axis is dim's minor-most)
  kAllToAll,       ///< gather `dim` and split `splitDim` over the group along `axis`
  kReduceScatter,  ///< sum partials over `axis`, keep part coordinate(axis) of `dim`
  kAllReduce,      ///< sum partials over `axis`
  kMakePartial,    ///< local: devices with coordinate(axis) != 0 zero their data
};

std::string_view primitiveName(PrimitiveKind kind);  ///< "split", "all_gather", ...

struct RedistStep {
  PrimitiveKind kind = PrimitiveKind::kSplit;
  DeviceMatrix matrix;  ///< the device matrix `axis` refers to
  int axis = 0;
  int dim = -1;       ///< tensor dim gathered/split/scattered (-1 for all-reduce/make-partial)
  int splitDim = -1;  ///< all-to-all only: the dim newly split
  /// Bytes each device sends (0 for local steps), at the bandwidth-optimal (ring) volume: over p
  /// devices, all-gather and reduce-scatter send (p-1)/p of the gathered / unscattered buffer,
  /// all-reduce 2(p-1)/p of the buffer, all-to-all (p-1)/p of the local buffer.
  int64_t bytesPerDevice = 0;
  /// The buffer the collective was priced on (cluster/collective.h's convention); 0 for local
  /// steps. Fusing collectives sums these.
  int64_t collectiveBytes = 0;
  double seconds = 0;     ///< cost of the step (0 for local steps)
  std::string algorithm;  ///< collective algorithm chosen, empty for local steps

  /// "all_gather dim 0 axis 1 (2 devices) of [2,4] (2048 bytes/device, 2.01e-06 s, ring)": the
  /// axis counted from the right, as tensor maps count it (`axis` itself indexes the matrix from
  /// the left).
  [[nodiscard]] std::string toString() const;
};

struct Redistribution {
  std::vector<RedistStep> steps;
  double seconds = 0;
  int64_t bytesPerDevice = 0;  ///< summed over steps
  [[nodiscard]] bool empty() const { return steps.empty(); }
};

struct RedistributionOptions {
  /// Let step 2 use all-to-all (seed 001's enable_alltoall, default false as in MindSpore).
  bool enableAllToAll = false;
  /// Seconds each all-gather and reduce-scatter adds per rank of its group, when the framework
  /// calls them with one tensor per rank (PyTorch's list API, as DeepSpeed's ZeRO-3 did in 2021):
  /// the process group copies every rank's part through a flat staging buffer, one copy launch
  /// per rank. 0: flat-buffer calls (_all_gather_base, reduce_scatter_tensor), no copies.
  double perRankCopySeconds = 0;
};

/// Plans the redistribution from `from` to `to`. Both must be valid, describe the same shape, and
/// cover the same set of ranks. Costs use `cluster` and `elementBytes`. One shape may be the
/// other padded to whole slices (a padded optimizer-parallel storage layout, cost/parameters.h):
/// the steps are then planned and priced on the padded shape. Example: storage [64 split 3 ways
/// -> padded 66] gathers to [64] replicated with one all-gather of 66 elements.
Expected<Redistribution> redistribute(const TensorLayout& from, const TensorLayout& to,
                                      const cluster::Cluster& cluster, int64_t elementBytes,
                                      const RedistributionOptions& options = {});

/// Seconds of `step`'s collective over the same device group on a buffer of `collectiveBytes`
/// (what fusing several such collectives into one costs); 0 for local steps.
double collectiveSeconds(const RedistStep& step, int64_t collectiveBytes,
                         const cluster::Cluster& cluster);

}  // namespace autopar::layout
