#pragma once
/// \file
/// Local kernels: one op of the IR on this rank's blocks of its inputs (internal to the runtime;
/// includes LibTorch). Each kernel computes what the op's sharding rule says a device computes:
/// a MatMul over a cut contraction leaves partial sums, a Gather over a cut table looks up only
/// its rows, a FlashAttention over cut heads runs its own heads, vocab-parallel CrossEntropy
/// all-reduces its three per-token values. Position-dependent kernels (Rotary, causal attention,
/// Gather, Slice, Dropout) read the global offsets of the blocks they hold.

#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "rules/sharded_op.h"
#include "rules/sharding_rule.h"
#include "runtime/process_groups.h"

namespace autopar::runtime {

/// Half-open global [lo, hi) per dim of a block.
using BlockRanges = std::vector<std::pair<int64_t, int64_t>>;

struct KernelContext {
  ProcessGroups& groups;
  const ir::Graph& graph;
  const ir::Op& op;
  const rules::ShardingRule& rule;
  const rules::ShardedOp& sharded;
  int64_t position = 0;  ///< this rank's index in sharded.matrix
  std::vector<BlockRanges> inputRanges;
  BlockRanges outputRanges;
  uint64_t seed = 0;  ///< dropout masks: the run's seed, the op and the step
  int step = 0;
};

/// Runs `context.op` on `inputs` (this rank's blocks, in the op's input layouts).
at::Tensor runKernel(const KernelContext& context, const std::vector<at::Tensor>& inputs);

/// A seeded generator for a named tensor, the same in every process.
at::Generator generatorFor(uint64_t seed, const std::string& name, int step);

}  // namespace autopar::runtime
