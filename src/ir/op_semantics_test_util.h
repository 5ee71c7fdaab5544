#pragma once
/// \file
/// Helpers shared by the op_semantics tests: build types tersely, run shape inference on one
/// kind, and print a backward rule's saved list as a short string ("in0 in1 out extra:64").

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "ir/op_semantics.h"

namespace autopar::ir {

/// Lets gtest print types in failure messages: "[2,3] fp32".
inline void PrintTo(const TensorType& type, std::ostream* os) {
  *os << shapeToString(type.shape) << ' ' << dtypeName(type.dtype);
}

}  // namespace autopar::ir

namespace autopar::ir::testing {

inline TensorType type(Shape shape, DType dtype = DType::kF32) {
  return TensorType{std::move(shape), dtype};
}

/// The single output type, or the error message prefixed with "error: ".
struct Inferred {
  bool ok = false;
  TensorType output;
  std::string error;
};

inline Inferred infer(OpKind kind, const OpAttrs& attrs, const std::vector<TensorType>& inputs) {
  auto outputs = inferOutputTypes(kind, attrs, inputs);
  if (!outputs) return Inferred{false, {}, outputs.error().message};
  if (outputs->size() != 1) return Inferred{false, {}, "expected exactly one output"};
  return Inferred{true, outputs->front(), ""};
}

/// The error message of a failing inference, or "<no error>" when it succeeds.
inline std::string inferError(OpKind kind, const OpAttrs& attrs,
                              const std::vector<TensorType>& inputs) {
  Inferred inferred = infer(kind, attrs, inputs);
  return inferred.ok ? "<no error>" : inferred.error;
}

/// Everything op_semantics says about one op with valid inputs.
struct Semantics {
  TensorType output;
  double flops = 0;
  int64_t bytes = 0;
  BackwardRule backward;
};

inline std::string savedToString(const BackwardRule& rule) {
  std::string text;
  for (const auto& saved : rule.saved) {
    if (!text.empty()) text += ' ';
    switch (saved.source) {
      case SavedTensor::Source::kInput:
        text += fmt::format("in{}", saved.index);
        break;
      case SavedTensor::Source::kOutput:
        text += fmt::format("out{}", saved.index);
        break;
      case SavedTensor::Source::kExtra:
        text += fmt::format("extra:{}", saved.bytes);
        break;
    }
  }
  return text;
}

/// Runs inference and the three cost functions. An inference error fails the test and returns an
/// output of shape [0] and dtype bool, which no expectation matches.
inline Semantics semantics(OpKind kind, const OpAttrs& attrs,
                           const std::vector<TensorType>& inputs) {
  Inferred inferred = infer(kind, attrs, inputs);
  if (!inferred.ok) {
    ADD_FAILURE() << "inference failed: " << inferred.error;
    return Semantics{type({0}, DType::kBool), 0, 0, {}};
  }
  const std::vector<TensorType> outputs{inferred.output};
  return Semantics{inferred.output, forwardFlops(kind, attrs, inputs, outputs),
                   forwardBytes(kind, attrs, inputs, outputs),
                   backwardRule(kind, attrs, inputs, outputs)};
}

}  // namespace autopar::ir::testing
