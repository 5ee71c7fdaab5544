#pragma once
/// \file
/// The generic engine: from a sharding rule and a strategy to layouts, partial sums and the
/// communication the op needs. Knows nothing about particular op kinds.
///
/// Device matrix: the cut of every factor with cut > 1, in factor order, preceded by a replica axis
/// when the cuts use fewer devices than the op runs on. For MatMul ((2,1),(1,4)) on 8 devices the
/// factor cuts are m=2, k=1, n=4 and the device matrix is [2,4]; on 16 devices it is [2,2,4], the
/// outer 2 being replicas. Replicas are outermost so that model-parallel cuts land on the inner,
/// faster links (Megatron places tensor parallelism inside a node for the same reason).

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "layout/strategy.h"
#include "layout/tensor_layout.h"
#include "rules/sharding_rule.h"
#include "util/expected.h"

namespace autopar::rules {

/// Cut count per factor of a rule.
using FactorCuts = std::vector<int64_t>;

/// Converts a seeds' strategy to factor cuts. A dim of several factors gives its cut to the major
/// factor first. Fails, naming input and dim, when the strategy's rank doesn't match, a cut doesn't
/// divide, a kNeedReplication factor or factor-less dim is cut, or two inputs cut one factor
/// differently ("inputs[0] dim 1 cuts factor k by 2 but inputs[1] dim 0 cuts it by 4").
Expected<FactorCuts> factorCutsFromStrategy(const ShardingRule& rule,
                                            const layout::Strategy& strategy);

/// The seeds' strategy (per input, per dim cuts) for factor cuts.
layout::Strategy strategyFromFactorCuts(const ShardingRule& rule, const FactorCuts& cuts);

/// Every factor-cut assignment whose product divides `numDevices` and whose cuts divide every
/// tensor extent, in a deterministic order (lexicographic on cuts). kNeedReplication factors get 1.
std::vector<FactorCuts> enumerateFactorCuts(const ShardingRule& rule, int64_t numDevices);

/// The default semi-auto strategy for an unannotated op: the batch factor cut by the largest
/// divisor of `numDevices` that divides it, everything else whole (data parallel).
FactorCuts defaultFactorCuts(const ShardingRule& rule, int64_t numDevices);

struct ShardedOp {
  FactorCuts cuts;
  layout::DeviceMatrix matrix;
  std::vector<int> factorAxis;                    ///< device-matrix axis per factor, -1 if uncut
  int replicaAxis = -1;                           ///< -1 when there are no replicas
  std::vector<layout::TensorLayout> inputs;       ///< layouts the op needs its inputs in
  std::vector<layout::TensorLayout> outputs;      ///< outputs; partial over cut reduction factors
  /// Per input, the axes over which its gradient comes out as partial sums: the cut factors that
  /// do not appear in that input. For a parameter these are the axes its gradient is all-reduced
  /// over (data parallel's gradient all-reduce is the batch factor's axis).
  std::vector<std::vector<int>> inputGradPartialAxes;
  /// Fraction of the op's full FLOPs one device computes: 1 / product of cuts.
  double computeFraction = 1.0;
};

/// Applies factor cuts to a rule over the devices `ranks` (their count must be divisible by the
/// product of cuts).
Expected<ShardedOp> applyFactorCuts(const ShardingRule& rule, const FactorCuts& cuts,
                                    const std::vector<int>& ranks);

}  // namespace autopar::rules
