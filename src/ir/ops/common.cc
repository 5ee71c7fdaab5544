#include <fmt/format.h>

#include "ir/ops/families.h"

namespace autopar::ir::ops {

Status expectInputCount(std::span<const TensorType> inputs, size_t count) {
  if (inputs.size() == count) return {};
  return Error{
      fmt::format("expected {} input{}, got {}", count, count == 1 ? "" : "s", inputs.size())};
}

Status expectRank(std::span<const TensorType> inputs, size_t index, size_t rank) {
  const size_t actual = inputs[index].shape.size();
  if (actual == rank) return {};
  return Error{fmt::format("inputs[{}] must be rank {}, got rank {}", index, rank, actual)};
}

Status expectMinRank(std::span<const TensorType> inputs, size_t index, size_t minRank) {
  const size_t actual = inputs[index].shape.size();
  if (actual >= minRank) return {};
  return Error{fmt::format("inputs[{}] must have rank >= {}, got rank {}", index, minRank, actual)};
}

Status expectSameDType(std::span<const TensorType> inputs, size_t index, size_t reference) {
  if (inputs[index].dtype == inputs[reference].dtype) return {};
  return Error{fmt::format("inputs[{}] dtype {} differs from inputs[{}] dtype {}", index,
                           dtypeName(inputs[index].dtype), reference,
                           dtypeName(inputs[reference].dtype))};
}

Status expectIntegerDType(std::span<const TensorType> inputs, size_t index) {
  if (isIntegerDType(inputs[index].dtype)) return {};
  return Error{fmt::format("inputs[{}] dtype {}, expected an integer type (int64, int32 or int8)",
                           index, dtypeName(inputs[index].dtype))};
}

Status expectFloatingDType(std::span<const TensorType> inputs, size_t index) {
  if (isFloating(inputs[index].dtype)) return {};
  return Error{
      fmt::format("inputs[{}] dtype {}, expected a floating type (fp32, bf16, fp16 or fp8)", index,
                  dtypeName(inputs[index].dtype))};
}

Status expectPositive(std::string_view field, int64_t value) {
  if (value > 0) return {};
  return Error{fmt::format("{} is {}, expected a positive count", field, value)};
}

Expected<int64_t> normalizeAxis(std::string_view field, int64_t axis, int64_t rank) {
  if (rank == 0) return Error{fmt::format("{} is {}, but inputs[0] is a scalar", field, axis)};
  if (axis < -rank || axis >= rank) {
    return Error{
        fmt::format("{} is {}, expected a value in [{}, {}]", field, axis, -rank, rank - 1)};
  }
  return axis < 0 ? axis + rank : axis;
}

bool isIntegerDType(DType dtype) {
  return dtype == DType::kI64 || dtype == DType::kI32 || dtype == DType::kI8;
}

double elements(const TensorType& type) { return static_cast<double>(numElements(type.shape)); }

int64_t totalBytes(std::span<const TensorType> types) {
  int64_t bytes = 0;
  for (const auto& type : types) bytes += type.bytes();
  return bytes;
}

int64_t streamingBytes(const TypedOp& op) { return totalBytes(op.inputs) + op.output.bytes(); }

int64_t savedExtraBytes(const BackwardRule& rule) {
  int64_t bytes = 0;
  for (const auto& saved : rule.saved) {
    if (saved.source == SavedTensor::Source::kExtra) bytes += saved.bytes;
  }
  return bytes;
}

double zeroFlops(const TypedOp& /*op*/) { return 0; }

SavedTensor savedInput(int index) {
  return SavedTensor{SavedTensor::Source::kInput, index, 0, std::nullopt};
}

SavedTensor savedInputAs(int index, DType dtype) {
  SavedTensor saved = savedInput(index);
  saved.keptAs = dtype;
  return saved;
}

SavedTensor savedOutput() { return SavedTensor{SavedTensor::Source::kOutput, 0, 0, std::nullopt}; }

SavedTensor savedExtra(int64_t bytes) {
  return SavedTensor{SavedTensor::Source::kExtra, 0, bytes, std::nullopt};
}

}  // namespace autopar::ir::ops
