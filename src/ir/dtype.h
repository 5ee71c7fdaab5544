#pragma once
/// \file
/// Element types of tensors and their sizes in bytes.

#include <cstdint>
#include <string>
#include <string_view>

#include "util/expected.h"

namespace autopar::ir {

enum class DType { kF32, kBF16, kF16, kFP8, kI64, kI32, kI8, kBool };

/// Size of one element in bytes: fp32 4, bf16/fp16 2, fp8 1, int64 8, int32 4, int8 1, bool 1.
int64_t dtypeBytes(DType dtype);

/// Canonical lower-case name, as written in graph JSON: "fp32", "bf16", "fp16", "fp8", "int64",
/// "int32", "int8", "bool".
std::string_view dtypeName(DType dtype);

/// Parses a canonical name (also accepts "float32", "float16", "bfloat16", "float8").
Expected<DType> parseDType(std::string_view name);

/// True for the floating-point types, which is what training computes in.
bool isFloating(DType dtype);

}  // namespace autopar::ir
