/// \file
/// Reshape and Transpose.
///   Reshape   [2,3,4] newShape {6,-1}  -> [6,4]   (a view: no FLOPs, no bytes moved)
///   Transpose [2,3,4] perm {2,0,1}     -> [4,2,3] (output dim i is input dim perm[i]; a copy)

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

// The index of the single -1 in newShape (or -1 when there is none), after checking the entries.
Expected<int64_t> inferredDim(const Shape& newShape) {
  int64_t inferred = -1;
  for (size_t dim = 0; dim < newShape.size(); ++dim) {
    if (newShape[dim] == -1) {
      if (inferred >= 0) return Error{"attrs.newShape has more than one -1"};
      inferred = static_cast<int64_t>(dim);
    } else if (newShape[dim] <= 0) {
      return Error{fmt::format("attrs.newShape[{}] is {}, expected a positive size or -1", dim,
                               newShape[dim])};
    }
  }
  return inferred;
}

Expected<TensorType> inferReshape(OpKind /*kind*/, const OpAttrs& attrs,
                                  std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 1); !status) return status.error();
  auto inferred = inferredDim(attrs.newShape);
  if (!inferred) return inferred.error();
  const int64_t inputElements = numElements(inputs[0].shape);
  Shape output = attrs.newShape;
  if (*inferred >= 0) {
    output[*inferred] = 1;
    const int64_t known = numElements(output);
    if (inputElements % known != 0) {
      return Error{fmt::format("attrs.newShape {} cannot hold the {} elements of inputs[0] {}",
                               shapeToString(attrs.newShape), inputElements,
                               shapeToString(inputs[0].shape))};
    }
    output[*inferred] = inputElements / known;
  }
  if (numElements(output) != inputElements) {
    return Error{fmt::format("attrs.newShape {} has {} elements but inputs[0] {} has {}",
                             shapeToString(attrs.newShape), numElements(output),
                             shapeToString(inputs[0].shape), inputElements)};
  }
  return TensorType{std::move(output), inputs[0].dtype};
}

int64_t zeroBytes(const TypedOp& /*op*/) { return 0; }

BackwardRule noBackward(const TypedOp& /*op*/) { return BackwardRule{}; }

Status checkPermutation(const std::vector<int64_t>& perm, size_t rank) {
  if (perm.size() != rank) {
    return Error{fmt::format("attrs.perm has size {}, expected {} (the rank of inputs[0])",
                             perm.size(), rank)};
  }
  std::vector<bool> seen(rank, false);
  for (int64_t dim : perm) {
    if (dim < 0 || dim >= static_cast<int64_t>(rank) || seen[dim]) {
      return Error{fmt::format("attrs.perm [{}] is not a permutation of 0..{}",
                               fmt::join(perm, ","), rank - 1)};
    }
    seen[dim] = true;
  }
  return {};
}

Expected<TensorType> inferTranspose(OpKind /*kind*/, const OpAttrs& attrs,
                                    std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 1); !status) return status.error();
  const Shape& input = inputs[0].shape;
  if (auto status = checkPermutation(attrs.perm, input.size()); !status) return status.error();
  Shape output;
  for (int64_t dim : attrs.perm) output.push_back(input[dim]);
  return TensorType{std::move(output), inputs[0].dtype};
}

// Reshape is a view: nothing is computed or moved, forward or backward.
constexpr FamilySemantics kReshape{inferReshape, zeroFlops, zeroBytes, noBackward};
// Transpose copies (reads and writes every element); its backward is the inverse transpose,
// again a copy with no FLOPs and nothing saved.
constexpr FamilySemantics kTranspose{inferTranspose, zeroFlops, streamingBytes, noBackward};

}  // namespace

const FamilySemantics& reshapeFamily() { return kReshape; }
const FamilySemantics& transposeFamily() { return kTranspose; }

}  // namespace autopar::ir::ops
