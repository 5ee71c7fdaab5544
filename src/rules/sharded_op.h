#pragma once
/// \file
/// The generic engine: from a sharding rule and a strategy to layouts, partial sums and the
/// communication the op needs. Knows nothing about particular op kinds.
///
/// Device matrix: the cut of every factor with cut > 1, in factor order, followed by a replica
/// axis when the cuts use fewer devices than the op runs on. For MatMul ((2,1),(1,4)) on 8 devices
/// the factor cuts are m=2, k=1, n=4 and the device matrix is [2,4]; on 16 devices it is [2,4,2],
/// the inner 2 being replicas. Replicas are innermost, as MindSpore places its repeated
/// calculation by default: in a Megatron-style plan the tensor-parallel axis is innermost, and an
/// op that is only data parallel (a norm, a residual add) is then replicated exactly over the
/// tensor-parallel group, so its batch blocks sit on the same devices as the matmuls' and no
/// redistribution is needed between them.
///
/// Layouts follow from the dim -> factor mapping: a dim is split by the axes of its cut factors,
/// major first. Outputs are partial sums over the axes of cut kReduction factors. A cut
/// kPassThrough factor that appears in no output leaves the outputs replicated over its axis (the
/// op's InternalCollective makes them whole, as in vocab-parallel cross-entropy).
///
/// Valid cuts: every cut divides the factor's extent in every dim it is part of, kNeedReplication
/// factors stay whole, and in a dim of several factors a minor factor is cut only when every
/// factor before it is cut whole (otherwise a device's share of the dim is strided, not one
/// block). Reshape [8] -> [2,4] cut as (2 of 2, 2 of 4) is valid; (1 of 2, 2 of 4) is not.

#include <cstdint>
#include <optional>
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
/// factor first: a dim [32] of parts (a=4, b=8) cut by 2 gives a=2, b=1; cut by 8 gives a=4 (a
/// whole) and b=2; cut by 16 gives a=4, b=4. A cut that neither divides a part nor is divided by
/// it (dim [24] of parts (4, 6) cut by 3) does not split along the factors and fails. Fails, naming
/// input and dim, when the strategy's rank doesn't match, a cut doesn't divide, a kNeedReplication
/// factor or factor-less dim is cut, or two inputs cut one factor differently ("inputs[0] dim 1
/// cuts factor k by 2 but inputs[1] dim 0 cuts it by 4").
Expected<FactorCuts> factorCutsFromStrategy(const ShardingRule& rule,
                                            const layout::Strategy& strategy);

/// The seeds' strategy (per input, per dim cuts) for factor cuts.
layout::Strategy strategyFromFactorCuts(const ShardingRule& rule, const FactorCuts& cuts);

/// Every factor-cut assignment whose product divides `numDevices` and whose cuts divide every
/// tensor extent, in a deterministic order (lexicographic on cuts). kNeedReplication factors get 1,
/// and only valid cuts (see above) are listed. MatMul [8,8] x [8,8] on 4 devices gives 10:
/// (1,1,1) (1,1,2) (1,1,4) (1,2,1) (1,2,2) (1,4,1) (2,1,1) (2,1,2) (2,2,1) (4,1,1).
std::vector<FactorCuts> enumerateFactorCuts(const ShardingRule& rule, int64_t numDevices);

/// The candidates an automatic search considers: the cuts that use every device (MindSpore's auto
/// mode only considers those), or all of them when the op is too small to use every device.
std::vector<FactorCuts> fullDeviceCuts(const ShardingRule& rule, int64_t numDevices);

/// The default semi-auto strategy for an unannotated op: the batch factor cut by the largest
/// divisor of `numDevices` that divides it, everything else whole (data parallel).
FactorCuts defaultFactorCuts(const ShardingRule& rule, int64_t numDevices);

/// The GEMM a contraction of two operands runs on one device, read from the factor structure:
/// rows are the factors the first operand has and the second lacks, columns those the second has
/// and the first lacks, depth the reduction factors; factors both operands share without reducing
/// them (a batched matmul's batch) count as rows, since each member adds row tiles. Each extent is
/// the product of its factors' sizes over their cuts. MatMul X [4,16,32] x W [32,64] cut b=2, n=4:
/// rows 2*16 = 32, columns 16, depth 32. Nullopt unless the rule has two operands and a reduction.
struct LocalGemm {
  double rows = 1;
  double columns = 1;
  double depth = 1;
};
std::optional<LocalGemm> localGemm(const ShardingRule& rule, const FactorCuts& cuts);

struct ShardedOp {
  FactorCuts cuts;
  layout::DeviceMatrix matrix;
  std::vector<int> factorAxis;                ///< device-matrix axis per factor, -1 if uncut
  int replicaAxis = -1;                       ///< -1 when there are no replicas
  std::vector<layout::TensorLayout> inputs;   ///< layouts the op needs its inputs in
  std::vector<layout::TensorLayout> outputs;  ///< outputs; partial over cut reduction factors
  /// Per input, the axes over which its gradient comes out as partial sums: the cut factors that
  /// do not appear in that input. For a parameter these are the axes its gradient is all-reduced
  /// over (data parallel's gradient all-reduce is the batch factor's axis).
  std::vector<std::vector<int>> inputGradPartialAxes;
  /// Fraction of the op's full FLOPs one device computes: 1 / product of cuts.
  double computeFraction = 1.0;
  /// The GEMM one device runs (localGemm of the rule and cuts); nullopt for other ops.
  std::optional<LocalGemm> gemm;
  /// Per cut internal factor (ShardingRule::internal): the device-matrix axis its statistics are
  /// all-reduced over, and their elements on one device, forward and backward together.
  struct InternalReduce {
    int axis = -1;
    int64_t elements = 0;
  };
  std::vector<InternalReduce> internalReduces;
};

/// Applies factor cuts to a rule over the devices `ranks` (their count must be divisible by the
/// product of cuts). Fails on invalid cuts and on "strategy uses 16 devices but the op runs on 8".
/// Example, MatMul X [64,32] x W [32,128] with cuts m=2, k=1, n=4 on ranks 0..7: matrix [2,4];
/// X dimAxes {{0},{}}, W {{},{1}}, output {{0},{1}} with no partial axes; X's gradient is partial
/// over axis 1 (n is cut and X lacks it), W's over axis 0 (m); computeFraction 1/8.
Expected<ShardedOp> applyFactorCuts(const ShardingRule& rule, const FactorCuts& cuts,
                                    const std::vector<int>& ranks);

}  // namespace autopar::rules
