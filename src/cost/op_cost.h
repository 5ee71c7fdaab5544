#pragma once
/// \file
/// The cost of one sharded op on one device: forward and backward compute (roofline), and the
/// collectives the op runs inside itself (rules' InternalCollective). Edges between ops are costed
/// by graph_cost.h; searches call costOfOp to compare an op's candidate strategies.

#include "cluster/cluster.h"
#include "cost/constants.h"
#include "ir/graph.h"
#include "rules/sharded_op.h"
#include "util/expected.h"

namespace autopar::cost {

struct OpCost {
  double forwardFlops = 0;   ///< per device
  double backwardFlops = 0;  ///< per device
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  double internalCommSeconds = 0;  ///< collectives inside the op (vocab-parallel loss)

  [[nodiscard]] double totalSeconds() const {
    return forwardSeconds + backwardSeconds + internalCommSeconds;
  }
};

/// Costs `op` of `graph` sharded as `shard` on `cluster` (the shard carries what its rule gives:
/// the local GEMM and the internal all-reduces). `fusedBytes` is the per-device traffic the op
/// saves by running fused with its neighbours (intermediates it no longer writes or reads,
/// cost/graph_cost.h); its backward saves the same share of its traffic. `ownKernel` false: the op
/// runs inside the kernel of the fused op before it, so it pays no kernel launch of its own.
/// `deviceConstants` are the cost model's for the cluster's device (CostConstants::forDevice).
OpCost costOfOp(const ir::Graph& graph, const ir::Op& op, const rules::ShardedOp& shard,
                const cluster::Cluster& cluster, const CostConstants& deviceConstants,
                double fusedBytes = 0, bool ownKernel = true);

/// Bytes of the elementwise kernels PyTorch's context parallelism runs around one attention op
/// whose query sequence is split `cp` ways (torch/distributed/tensor/experimental/_attention.py
/// at torch 2.6, the release torchtitan's Dec 2024 benchmarks ran): 0 unless `op` is an attention
/// with its sequence split. CodePath::ringMergesInFp32 adds them at the HBM bandwidth.
struct RingMergeBytes {
  double forward = 0;
  double backward = 0;
  double backwardWorkspace = 0;  ///< buffers the attention's backward holds at its peak
};
RingMergeBytes ringMergeBytes(const ir::Op& op, const rules::ShardedOp& shard);

/// The memory traffic a rotary embedding adds, each way (forward, and again backward), when it
/// runs as PyTorch eager runs torchtitan's apply_rotary_emb instead of as one fused kernel: 0
/// unless `op` is a Rotary. CodePath::fusedElementwise off adds it at the HBM bandwidth.
double eagerRotaryBytes(const ir::Graph& graph, const ir::Op& op, const rules::ShardedOp& shard);

/// The memory traffic an RMSNorm adds, forward and backward, when it runs as eager PyTorch's
/// composite ops instead of one fused kernel each way: 0 unless `op` is an RMSNorm of a 16-bit
/// input. Example: 32 and 86 bytes an element of a bf16 input. CodePath::fusedNorm and
/// fusedElementwise both off add it at the HBM bandwidth.
struct EagerNormBytes {
  double forward = 0;
  double backward = 0;
};
EagerNormBytes eagerNormBytes(const ir::Graph& graph, const ir::Op& op,
                              const rules::ShardedOp& shard);

}  // namespace autopar::cost
