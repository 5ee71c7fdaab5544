/// \file
/// MatMul and BatchMatMul as factors.
///   MatMul      A [b..., m, k] x B [k, n]       -> [b..., m, n]: factors b..., m, k, n
///   BatchMatMul A [b..., m, k] x B [b..., k, n] -> [b..., m, n]: factors b..., m, k, n; when B
///               has fewer batch dims, they are A's last ones and A's leading ones map to
///               factors in A and the output only (broadcast over B)
/// k is a reduction factor: cutting it leaves partial sums in the output (Megatron's row-parallel
/// linear). The first leading dim of A is the batch; a 2-D A has no leading dims, so m is.
/// transposeA reads A as [..., k, m] and transposeB reads B as [..., n, k]; the factors stay the
/// same, only the dims they map to swap.
///
/// Example: X [4,16,32] x W [32,64] gives factors b (batch, 4), m (16), k (32, reduction), n (64):
/// X dims {b},{m},{k}; W dims {k},{n}; output [4,16,64] dims {b},{m},{n}.
/// The experts' linear, tokens [2,8,1024,4096] x weights [8,4096,14336]: factors b0 (batch), b1
/// (the experts), m, k, n; the weights' dims {b1},{k},{n}, so cutting b1 (expert parallelism)
/// splits both and cutting b0 (data parallelism) leaves the weights replicated.

#include <fmt/format.h>

#include "rules/family_rules.h"

namespace autopar::rules {
namespace {

// Dims of a matrix operand [..., rows, cols] as factor lists, leading dims first.
std::vector<std::vector<int>> matrixDims(const std::vector<std::vector<int>>& leading, int rows,
                                         int cols, bool transposed) {
  std::vector<std::vector<int>> dims = leading;
  dims.push_back({transposed ? cols : rows});
  dims.push_back({transposed ? rows : cols});
  return dims;
}

Status checkRanks(const OpTypes& op) {
  if (auto status = expectInputCount(op, 2); !status) return status;
  const bool batched = op.kind == ir::OpKind::kBatchMatMul;
  if (auto status = expectRank(op, 0, batched ? 3 : 2, /*minimum=*/true); !status) return status;
  if (!batched) return expectRank(op, 1, 2);
  const size_t rank = op.inputs[1].shape.size();
  if (rank < 3 || rank > op.inputs[0].shape.size()) {
    return Error{fmt::format("inputs[1] must have rank 3 to {} (inputs[0]'s), got rank {}",
                             op.inputs[0].shape.size(), rank)};
  }
  return {};
}

}  // namespace

Expected<ShardingRule> matmulRule(const OpTypes& op) {
  if (auto status = checkRanks(op); !status) return status.error();
  const size_t leadingCount = op.inputs[0].shape.size() - 2;
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  std::vector<std::vector<int>> leading;
  for (size_t dim = 0; dim < leadingCount; ++dim) {
    leading.push_back({builder.factor(indexedName("b", dim, leadingCount), FactorKind::kPassThrough,
                                      /*isBatch=*/dim == 0)});
  }
  const int m = builder.factor("m", FactorKind::kPassThrough, /*isBatch=*/leadingCount == 0);
  const int k = builder.factor("k", FactorKind::kReduction);
  const int n = builder.factor("n");
  // B's batch dims are A's last ones (all of them unless A's leading ones are broadcast).
  const size_t sharedCount =
      op.kind == ir::OpKind::kBatchMatMul ? op.inputs[1].shape.size() - 2 : 0;
  const std::vector<std::vector<int>> shared(leading.end() - static_cast<ptrdiff_t>(sharedCount),
                                             leading.end());
  builder.operand(0, matrixDims(leading, m, k, op.attrs.transposeA))
      .operand(1, matrixDims(shared, k, n, op.attrs.transposeB))
      .result(0, matrixDims(leading, m, n, false));
  return std::move(builder).build();
}

}  // namespace autopar::rules
