#pragma once
/// \file
/// The optimizer step's costs: the memory traffic of a mixed-precision Adam step per parameter
/// element, and, under group update, getting the updated parameters back to every replica
/// (seed 004's broadcasts, or Megatron-LM's distributed optimizer's all-gather of its buffer).

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "cost/memory.h"
#include "cost/parameters.h"
#include "ir/dtype.h"
#include "layout/redistribution.h"
#include "util/expected.h"

namespace autopar::cost {

/// HBM bytes a mixed-precision optimizer step moves per parameter element, pass by pass as
/// Megatron-LM's optimizer runs them (each a multi-tensor kernel over all parameters):
///   - gradients kept in the weight's dtype are first copied into fp32 main gradients (read
///     the 16-bit gradient, write 4);
///   - fp16 only: unscale the main gradients and check them for inf/nan (read and write 4);
///   - the global gradient norm for clipping (read 4);
///   - Adam (apex FusedAdam): read the fp32 gradient, master weight and two moments (16), write
///     master and moments (12);
///   - copy the master weight into the 16-bit model weight (read 4, write 2);
///   - zero the gradient buffer for the next step (write its bytes).
/// Example: bf16 with fp32 gradients: 4 + 28 + 6 + 4 = 42; fp16 with fp16 gradients: 6 + 8 + 4
/// + 28 + 6 + 2 = 54. An fp32 weight needs no master copy and no copy back. Under
/// OptimizerState::kRemainders Adam reads and writes the bf16 weight and its remainder instead
/// of the master (28, no copy back: 36); under kBf16, bf16 moments and the weight (16: 24).
double optimizerBytesPerElement(ir::DType weight, const OptimizerSpec& optimizer);

/// Seed 004's data-parallel mode: the updated parameter broadcast from its owner to its
/// optimizerShards replicas.
double broadcastSeconds(const cluster::Cluster& cluster, const ParameterPlacement& placement,
                        int64_t weightBytes);

/// Megatron-LM's distributed optimizer all-gathers the updated slices of its contiguous parameter
/// buffer: per stage, the all-gathers over one device group merge into one collective of their
/// summed bytes (one latency), as the buffer is gathered whole.
class BufferGather {
 public:
  BufferGather(const cluster::Cluster& cluster, const layout::RedistributionOptions& options)
      : cluster_(cluster), options_(options) {}

  /// Adds `placement`'s gather from its gradientTarget slice back to its use layout on `stage`.
  Status add(int stage, const ParameterPlacement& placement, int64_t elementBytes);

  /// Seconds per stage (`stages` entries) of the merged all-gathers.
  [[nodiscard]] std::vector<double> secondsPerStage(size_t stages) const;

 private:
  using Key = std::tuple<int, int, std::vector<int64_t>, int>;  // stage, kind, matrix, axis
  const cluster::Cluster& cluster_;
  const layout::RedistributionOptions& options_;
  std::map<Key, std::pair<layout::RedistStep, int64_t>> merged_;
};

}  // namespace autopar::cost
