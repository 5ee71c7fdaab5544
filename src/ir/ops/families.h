#pragma once
/// \file
/// Internal to ir. The interface every op family implements, one family per file in ir/ops/, and
/// the small helpers they share. op_semantics.cc looks up the family of a kind and calls it; no
/// other code switches on op kinds.
///
/// Error messages from a family do not name the op kind: the dispatcher prefixes it, so a family
/// returns "inputs[1] must be rank 2, got rank 3" and the caller sees
/// "MatMul: inputs[1] must be rank 2, got rank 3".

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "ir/op.h"
#include "ir/op_semantics.h"
#include "ir/tensor.h"
#include "util/expected.h"

namespace autopar::ir::ops {

/// One op as the cost functions see it: its kind, attributes, input types and output types, all
/// already accepted by the family's inference. `output` is the first output, the only one of
/// every kind but Opaque.
struct TypedOp {
  OpKind kind;
  const OpAttrs& attrs;
  std::span<const TensorType> inputs;
  const TensorType& output;
  std::span<const TensorType> outputs;
};

/// What a family knows about its kinds. Every kind has exactly one output except Opaque, whose
/// family sets inferOutputTypes instead of inferOutputType.
struct FamilySemantics {
  /// Validates the inputs and attributes and returns the output type.
  Expected<TensorType> (*inferOutputType)(OpKind kind, const OpAttrs& attrs,
                                          std::span<const TensorType> inputs);
  /// Forward FLOPs at full size; a multiply-add counts 2.
  double (*forwardFlops)(const TypedOp& op);
  /// Forward bytes read plus written at full size.
  int64_t (*forwardBytes)(const TypedOp& op);
  /// Backward FLOPs and the tensors the forward pass keeps for it.
  BackwardRule (*backwardRule)(const TypedOp& op);
  /// Set by a family of several outputs in place of inferOutputType: every output type.
  Expected<std::vector<TensorType>> (*inferOutputTypes)(
      OpKind kind, const OpAttrs& attrs, std::span<const TensorType> inputs) = nullptr;
};

const FamilySemantics& matmulFamily();             ///< matmul.cc
const FamilySemantics& elementwiseBinaryFamily();  ///< elementwise_binary.cc
const FamilySemantics& elementwiseUnaryFamily();   ///< elementwise_unary.cc
const FamilySemantics& softmaxFamily();            ///< softmax.cc
const FamilySemantics& normFamily();               ///< norm.cc
const FamilySemantics& reduceFamily();             ///< reduce.cc
const FamilySemantics& gatherFamily();             ///< gather.cc
const FamilySemantics& reshapeFamily();            ///< reshape_transpose.cc
const FamilySemantics& transposeFamily();          ///< reshape_transpose.cc
const FamilySemantics& concatFamily();             ///< concat_slice.cc
const FamilySemantics& sliceFamily();              ///< concat_slice.cc
const FamilySemantics& attentionFamily();          ///< attention.cc
const FamilySemantics& rotaryFamily();             ///< attention.cc
const FamilySemantics& crossEntropyFamily();       ///< cross_entropy.cc
const FamilySemantics& moeFamily();                ///< moe.cc
const FamilySemantics& opaqueFamily();             ///< opaque.cc

// ---- Validation helpers (common.cc). Each returns an error in the family message style. ----

/// "expected 2 inputs, got 1"
Status expectInputCount(std::span<const TensorType> inputs, size_t count);
/// "inputs[1] must be rank 2, got rank 3"
Status expectRank(std::span<const TensorType> inputs, size_t index, size_t rank);
/// "inputs[0] must have rank >= 2, got rank 1"
Status expectMinRank(std::span<const TensorType> inputs, size_t index, size_t minRank);
/// "inputs[1] dtype bf16 differs from inputs[0] dtype fp32"
Status expectSameDType(std::span<const TensorType> inputs, size_t index, size_t reference);
/// "inputs[1] dtype fp32, expected an integer type (int64, int32 or int8)"
Status expectIntegerDType(std::span<const TensorType> inputs, size_t index);
/// "inputs[0] dtype int32, expected a floating type (fp32, bf16, fp16 or fp8)"
Status expectFloatingDType(std::span<const TensorType> inputs, size_t index);
/// "attrs.numHeads is 0, expected a positive count"
Status expectPositive(std::string_view field, int64_t value);

/// Maps an axis in [-rank, rank) to [0, rank). Example: normalizeAxis("attrs.axis", -1, 3) is 2;
/// normalizeAxis("attrs.axis", 3, 3) fails with "attrs.axis is 3, expected a value in [-3, 2]".
Expected<int64_t> normalizeAxis(std::string_view field, int64_t axis, int64_t rank);

/// True for int64, int32 and int8 (bool is not an index type).
bool isIntegerDType(DType dtype);

// ---- Cost helpers (common.cc). ----

/// Element count as a double, the type FLOP formulas are computed in.
double elements(const TensorType& type);
/// Sum of the byte sizes of the types.
int64_t totalBytes(std::span<const TensorType> types);
/// The default forwardBytes: every input read once plus the output written once.
/// Example: Add [1024] + [1024] in fp32 is 3 * 4096 = 12288 bytes.
int64_t streamingBytes(const TypedOp& op);
/// Sum of the kExtra bytes of a rule: statistics and masks the forward pass writes for the
/// backward pass. Families that save extras add them to streamingBytes.
int64_t savedExtraBytes(const BackwardRule& rule);
/// Zero FLOPs, for the data-movement families.
double zeroFlops(const TypedOp& op);

SavedTensor savedInput(int index);
/// Input `index` kept as a copy in `dtype` (an upcast the backward reads).
SavedTensor savedInputAs(int index, DType dtype);
SavedTensor savedOutput();
SavedTensor savedExtra(int64_t bytes);

}  // namespace autopar::ir::ops
