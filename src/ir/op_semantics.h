#pragma once
/// \file
/// What the IR knows about each op kind, independent of sharding: output types, forward cost and
/// the backward rule. Each family implements these in ir/ops/<family>.cc; the functions below
/// dispatch on familyOf(op.kind).

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ir/op.h"
#include "ir/tensor.h"
#include "util/expected.h"

namespace autopar::ir {

/// Infers output types from input types: one type for every kind but Opaque, which returns its
/// attrs.outputTypes. Errors name the op kind and the offending input, e.g.
/// "MatMul: inputs[1] dim 0 is 64 but inputs[0] contracts over 32".
/// The caller prefixes the op's name and source location.
Expected<std::vector<TensorType>> inferOutputTypes(OpKind kind, const OpAttrs& attrs,
                                                   std::span<const TensorType> inputs);

/// Forward floating-point operations of one execution of the op at full (unsharded) size.
/// Multiply-add counts 2. Example: MatMul [m,k]x[k,n] is 2*m*k*n.
double forwardFlops(OpKind kind, const OpAttrs& attrs, std::span<const TensorType> inputs,
                    std::span<const TensorType> outputs);

/// Bytes read plus bytes written by the forward op at full size (the memory-bound roofline term).
int64_t forwardBytes(OpKind kind, const OpAttrs& attrs, std::span<const TensorType> inputs,
                     std::span<const TensorType> outputs);

/// A tensor the forward pass keeps alive for the backward pass.
struct SavedTensor {
  enum class Source { kInput, kOutput, kExtra };
  Source source = Source::kInput;
  int index = 0;      ///< which input/output; unused for kExtra
  int64_t bytes = 0;  ///< for kExtra only (masks, softmax statistics, norm rstd)
  /// kInput/kOutput: kept as a copy in this dtype rather than the tensor's own (the fp32 softmax
  /// a cross entropy keeps of bf16 logits).
  std::optional<DType> keptAs;
  /// How the saved bytes scale when the op is sharded: for kInput/kOutput the saved tensor's own
  /// shard; for kExtra the op's output shard ratio is used.
};

struct BackwardRule {
  double flops = 0;                ///< FLOPs of the backward pass (grads of all inputs)
  std::vector<SavedTensor> saved;  ///< what the forward pass must keep
  /// Memory traffic of the backward pass, the kernels' reads and writes; -1 where the family
  /// does not say, and the cost model takes twice the forward traffic.
  int64_t bytes = -1;
};

/// The backward rule at full size. Example: MatMul keeps both inputs and costs 2x forward FLOPs
/// (one matmul for dA, one for dB); ReLU keeps its output and costs one op per element.
BackwardRule backwardRule(OpKind kind, const OpAttrs& attrs, std::span<const TensorType> inputs,
                          std::span<const TensorType> outputs);

}  // namespace autopar::ir
