#include "ir/dtype.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace autopar::ir {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int64_t bytes;
  bool floating;
};

// Declaration order of DType; dtypeInfo() indexes it by the enum value.
constexpr std::array<DTypeInfo, 8> kDTypes = {{
    {DType::kF32, "fp32", 4, true},
    {DType::kBF16, "bf16", 2, true},
    {DType::kF16, "fp16", 2, true},
    {DType::kFP8, "fp8", 1, true},
    {DType::kI64, "int64", 8, false},
    {DType::kI32, "int32", 4, false},
    {DType::kI8, "int8", 1, false},
    {DType::kBool, "bool", 1, false},
}};

// Long-form spellings accepted by parseDType in addition to the canonical names.
constexpr std::array<std::pair<std::string_view, DType>, 4> kAliases = {{
    {"float32", DType::kF32},
    {"float16", DType::kF16},
    {"bfloat16", DType::kBF16},
    {"float8", DType::kFP8},
}};

constexpr bool tableFollowsEnumOrder() {
  for (size_t i = 0; i < kDTypes.size(); ++i) {
    if (static_cast<size_t>(kDTypes[i].dtype) != i) return false;
  }
  return kDTypes.size() == static_cast<size_t>(DType::kBool) + 1;
}
static_assert(tableFollowsEnumOrder(), "kDTypes must list every DType in declaration order");

const DTypeInfo& dtypeInfo(DType dtype) { return kDTypes.at(static_cast<size_t>(dtype)); }

}  // namespace

int64_t dtypeBytes(DType dtype) { return dtypeInfo(dtype).bytes; }

std::string_view dtypeName(DType dtype) { return dtypeInfo(dtype).name; }

bool isFloating(DType dtype) { return dtypeInfo(dtype).floating; }

Expected<DType> parseDType(std::string_view name) {
  for (const auto& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  for (const auto& [alias, dtype] : kAliases) {
    if (alias == name) return dtype;
  }
  return Error{fmt::format(
      "unknown dtype '{}', expected one of fp32, bf16, fp16, fp8, int64, int32, int8, bool", name)};
}

}  // namespace autopar::ir
