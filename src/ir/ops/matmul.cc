/// \file
/// MatMul and BatchMatMul.
///   MatMul:      A [..., m, k] x B [k, n]       -> [..., m, n]  (A's leading dims are batch)
///   BatchMatMul: A [a..., b..., m, k] x B [b..., k, n] -> [a..., b..., m, n] (rank >= 3; B's
///                batch dims equal A's last ones, A's leading a... broadcast over B as in
///                torch.matmul: the experts' weights [E, h, f] against tokens [b, E, c, h])
/// attrs.transposeA reads A as [..., k, m]; attrs.transposeB reads B as [..., n, k].

#include <fmt/format.h>

#include <algorithm>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

// The contracted size k, read from A (inputs[0]) after its transpose flag.
int64_t contractedSize(const OpAttrs& attrs, const Shape& a) {
  return attrs.transposeA ? a[a.size() - 2] : a[a.size() - 1];
}

Status checkRanks(OpKind kind, std::span<const TensorType> inputs) {
  if (kind == OpKind::kBatchMatMul) {
    if (auto status = expectMinRank(inputs, 0, 3); !status) return status;
    return expectMinRank(inputs, 1, 3);
  }
  if (auto status = expectMinRank(inputs, 0, 2); !status) return status;
  return expectRank(inputs, 1, 2);
}

Expected<TensorType> inferMatMul(OpKind kind, const OpAttrs& attrs,
                                 std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 2); !status) return status.error();
  if (auto status = checkRanks(kind, inputs); !status) return status.error();
  const Shape& a = inputs[0].shape;
  const Shape& b = inputs[1].shape;
  const int64_t m = attrs.transposeA ? a[a.size() - 1] : a[a.size() - 2];
  const int64_t k = contractedSize(attrs, a);
  const size_t kDimOfB = attrs.transposeB ? b.size() - 1 : b.size() - 2;
  const int64_t n = attrs.transposeB ? b[b.size() - 2] : b[b.size() - 1];
  if (b[kDimOfB] != k) {
    return Error{fmt::format("inputs[1] dim {} is {} but inputs[0] contracts over {}", kDimOfB,
                             b[kDimOfB], k)};
  }
  Shape output(a.begin(), a.end() - 2);
  if (kind == OpKind::kBatchMatMul) {
    const Shape batchOfB(b.begin(), b.end() - 2);
    const bool matches = batchOfB.size() <= output.size() &&
                         std::equal(batchOfB.begin(), batchOfB.end(),
                                    output.end() - static_cast<std::ptrdiff_t>(batchOfB.size()));
    if (!matches) {
      return Error{fmt::format("inputs[1] batch dims {} differ from the last of inputs[0]'s {}",
                               shapeToString(batchOfB), shapeToString(output))};
    }
  }
  output.push_back(m);
  output.push_back(n);
  return TensorType{std::move(output), inputs[0].dtype};
}

// Each output element is a dot product of length k: k multiplies and k adds.
// MatMul [m,k]x[k,n]: numel(out) = m*n, so 2*m*k*n; A's batch dims multiply into m.
double matmulFlops(const TypedOp& op) {
  return 2.0 * elements(op.output) *
         static_cast<double>(contractedSize(op.attrs, op.inputs[0].shape));
}

// dA = dC x B^T and dB = A^T x dC are each a matmul of the forward's size, so 2x forward FLOPs;
// they need A and B.
BackwardRule matmulBackward(const TypedOp& op) {
  return BackwardRule{2.0 * matmulFlops(op), {savedInput(0), savedInput(1)}};
}

constexpr FamilySemantics kMatMul{inferMatMul, matmulFlops, streamingBytes, matmulBackward};

}  // namespace

const FamilySemantics& matmulFamily() { return kMatMul; }

}  // namespace autopar::ir::ops
