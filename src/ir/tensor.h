#pragma once
/// \file
/// Tensors of the graph: a shape, an element type and a role.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace autopar::ir {

using Shape = std::vector<int64_t>;
using TensorId = int32_t;
using OpId = int32_t;
inline constexpr OpId kNoOp = -1;

/// Number of elements of a shape; 1 for a scalar (rank 0).
/// The product of the dims; INT64_MAX when it overflows.
int64_t numElements(const Shape& shape);

/// "[2,3,4]"
std::string shapeToString(const Shape& shape);

struct TensorType {
  Shape shape;
  DType dtype = DType::kF32;

  [[nodiscard]] int64_t bytes() const { return numElements(shape) * dtypeBytes(dtype); }
  bool operator==(const TensorType&) const = default;
};

enum class TensorRole {
  kInput,       ///< fed from the data loader (tokens, labels, images)
  kParameter,   ///< trainable weight: has gradients and optimizer state
  kActivation,  ///< produced by an op
};

struct Tensor {
  TensorId id = -1;
  std::string name;
  TensorType type;
  TensorRole role = TensorRole::kActivation;
  OpId producer = kNoOp;        ///< kNoOp for inputs and parameters
  std::vector<OpId> consumers;  ///< in graph order; an op using it twice appears twice
  /// Parameters: seed 004's per-parameter parallel_optimizer flag; unset follows the global
  /// setting and its size threshold.
  std::optional<bool> parallelOptimizer;

  [[nodiscard]] bool isParameter() const { return role == TensorRole::kParameter; }
  /// Whether backward makes a gradient for it: not for a graph input (the samples, token ids)
  /// nor for an integer tensor.
  [[nodiscard]] bool hasGradient() const {
    return isFloating(type.dtype) && role != TensorRole::kInput;
  }
};

}  // namespace autopar::ir
