#include "ir/op_semantics.h"

#include <cassert>
#include <string>

#include "ir/op_kind.h"
#include "ir/ops/families.h"

namespace autopar::ir {
namespace {

// The only switch on op families: everything else reads the family's FamilySemantics.
const ops::FamilySemantics& semanticsOf(OpKind kind) {
  switch (familyOf(kind)) {
    case OpFamily::kMatMul:
      return ops::matmulFamily();
    case OpFamily::kElementwiseBinary:
      return ops::elementwiseBinaryFamily();
    case OpFamily::kElementwiseUnary:
      return ops::elementwiseUnaryFamily();
    case OpFamily::kSoftmax:
      return ops::softmaxFamily();
    case OpFamily::kNorm:
      return ops::normFamily();
    case OpFamily::kReduce:
      return ops::reduceFamily();
    case OpFamily::kGather:
      return ops::gatherFamily();
    case OpFamily::kReshape:
      return ops::reshapeFamily();
    case OpFamily::kTranspose:
      return ops::transposeFamily();
    case OpFamily::kConcat:
      return ops::concatFamily();
    case OpFamily::kSlice:
      return ops::sliceFamily();
    case OpFamily::kAttention:
      return ops::attentionFamily();
    case OpFamily::kRotary:
      return ops::rotaryFamily();
    case OpFamily::kCrossEntropy:
      return ops::crossEntropyFamily();
    case OpFamily::kMoE:
      return ops::moeFamily();
    case OpFamily::kOpaque:
      return ops::opaqueFamily();
  }
  assert(false && "familyOf returned a value outside OpFamily");
  return ops::elementwiseUnaryFamily();
}

// The cost functions take the types inferOutputTypes accepted; an op without outputs is a
// programmer error, not user input.
ops::TypedOp typedOp(OpKind kind, const OpAttrs& attrs, std::span<const TensorType> inputs,
                     std::span<const TensorType> outputs) {
  assert(!outputs.empty() && "every op kind has at least one output");
  return ops::TypedOp{kind, attrs, inputs, outputs.front(), outputs};
}

}  // namespace

Expected<std::vector<TensorType>> inferOutputTypes(OpKind kind, const OpAttrs& attrs,
                                                   std::span<const TensorType> inputs) {
  const ops::FamilySemantics& family = semanticsOf(kind);
  if (family.inferOutputTypes != nullptr) {
    auto outputs = family.inferOutputTypes(kind, attrs, inputs);
    if (!outputs) return outputs.error().in(std::string(opKindName(kind)));
    return outputs;
  }
  auto output = family.inferOutputType(kind, attrs, inputs);
  if (!output) return output.error().in(std::string(opKindName(kind)));
  return std::vector<TensorType>{std::move(*output)};
}

double forwardFlops(OpKind kind, const OpAttrs& attrs, std::span<const TensorType> inputs,
                    std::span<const TensorType> outputs) {
  return semanticsOf(kind).forwardFlops(typedOp(kind, attrs, inputs, outputs));
}

int64_t forwardBytes(OpKind kind, const OpAttrs& attrs, std::span<const TensorType> inputs,
                     std::span<const TensorType> outputs) {
  return semanticsOf(kind).forwardBytes(typedOp(kind, attrs, inputs, outputs));
}

BackwardRule backwardRule(OpKind kind, const OpAttrs& attrs, std::span<const TensorType> inputs,
                          std::span<const TensorType> outputs) {
  return semanticsOf(kind).backwardRule(typedOp(kind, attrs, inputs, outputs));
}

}  // namespace autopar::ir
