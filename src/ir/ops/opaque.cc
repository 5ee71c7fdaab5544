/// \file
/// Opaque: an op autopar does not understand (an ONNX op it does not translate) but whose output
/// types are known. They cannot be inferred, so they come with the op in attrs.outputTypes, and
/// attrs.opaqueType keeps the source's name for it:
///   Opaque "TopK" x [8, 1000] fp32, k [1] int64 -> [8, 5] fp32, [8, 5] int64
///
/// Cost. What the op computes is unknown, so it is priced as memory-bound, the way a roofline
/// prices an op whose FLOPs are unknown but whose operands must move:
///   - forward: 0 FLOPs; every input read once and every output written once;
///   - backward: 0 FLOPs; every output gradient and every saved input read once, and a gradient
///     written for every floating input (integer and bool tensors have none). It keeps every input
///     for the backward pass, since which of them its gradient needs is unknown.
/// An op that does a few operations per element moves more bytes than a current accelerator's
/// ridge point allows FLOPs to matter (an H100's is about 295 bf16 FLOPs per byte: 989 TFLOP/s
/// over 3.35 TB/s), so for the elementwise, data-movement and normalisation ops that exporters
/// most often emit outside the translated set this is the time the roofline would give anyway. A
/// compute-bound op (a convolution, a recurrent cell) is under-priced; its sharding is unaffected,
/// since the op is replicated whatever it costs.

#include <fmt/format.h>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

Expected<std::vector<TensorType>> inferOpaque(OpKind /*kind*/, const OpAttrs& attrs,
                                              std::span<const TensorType> /*inputs*/) {
  if (attrs.opaqueType.empty()) {
    return Error{"attrs.op_type is empty, expected the name the source gives the op"};
  }
  if (attrs.outputTypes.empty()) {
    return Error{fmt::format("'{}': attrs.output_types is empty, expected one type per output",
                             attrs.opaqueType)};
  }
  return attrs.outputTypes;
}

int64_t opaqueBytes(const TypedOp& op) { return totalBytes(op.inputs) + totalBytes(op.outputs); }

int64_t floatingBytes(std::span<const TensorType> types) {
  int64_t bytes = 0;
  for (const auto& type : types) {
    if (isFloating(type.dtype)) bytes += type.bytes();
  }
  return bytes;
}

BackwardRule opaqueBackward(const TypedOp& op) {
  BackwardRule rule;
  for (size_t index = 0; index < op.inputs.size(); ++index) {
    rule.saved.push_back(savedInput(static_cast<int>(index)));
  }
  rule.bytes = totalBytes(op.outputs) + totalBytes(op.inputs) + floatingBytes(op.inputs);
  return rule;
}

// inferOutputType is unused: inferOutputTypes gives every output.
constexpr FamilySemantics kOpaque{nullptr, zeroFlops, opaqueBytes, opaqueBackward, inferOpaque};

}  // namespace

const FamilySemantics& opaqueFamily() { return kOpaque; }

}  // namespace autopar::ir::ops
