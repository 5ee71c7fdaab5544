#include "ir/op_kind.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace autopar::ir {
namespace {

struct OpKindInfo {
  OpKind kind;
  std::string_view name;
  OpFamily family;
};

// Declaration order of OpKind; kindInfo() indexes it by the enum value.
constexpr std::array<OpKindInfo, 33> kOpKinds = {{
    {OpKind::kMatMul, "MatMul", OpFamily::kMatMul},
    {OpKind::kBatchMatMul, "BatchMatMul", OpFamily::kMatMul},
    {OpKind::kAdd, "Add", OpFamily::kElementwiseBinary},
    {OpKind::kSub, "Sub", OpFamily::kElementwiseBinary},
    {OpKind::kMul, "Mul", OpFamily::kElementwiseBinary},
    {OpKind::kDiv, "Div", OpFamily::kElementwiseBinary},
    {OpKind::kReLU, "ReLU", OpFamily::kElementwiseUnary},
    {OpKind::kGeLU, "GeLU", OpFamily::kElementwiseUnary},
    {OpKind::kSiLU, "SiLU", OpFamily::kElementwiseUnary},
    {OpKind::kTanh, "Tanh", OpFamily::kElementwiseUnary},
    {OpKind::kSigmoid, "Sigmoid", OpFamily::kElementwiseUnary},
    {OpKind::kExp, "Exp", OpFamily::kElementwiseUnary},
    {OpKind::kNeg, "Neg", OpFamily::kElementwiseUnary},
    {OpKind::kSqrt, "Sqrt", OpFamily::kElementwiseUnary},
    {OpKind::kCast, "Cast", OpFamily::kElementwiseUnary},
    {OpKind::kDropout, "Dropout", OpFamily::kElementwiseUnary},
    {OpKind::kSoftmax, "Softmax", OpFamily::kSoftmax},
    {OpKind::kLayerNorm, "LayerNorm", OpFamily::kNorm},
    {OpKind::kRMSNorm, "RMSNorm", OpFamily::kNorm},
    {OpKind::kReduceSum, "ReduceSum", OpFamily::kReduce},
    {OpKind::kReduceMean, "ReduceMean", OpFamily::kReduce},
    {OpKind::kReduceMax, "ReduceMax", OpFamily::kReduce},
    {OpKind::kGather, "Gather", OpFamily::kGather},
    {OpKind::kReshape, "Reshape", OpFamily::kReshape},
    {OpKind::kTranspose, "Transpose", OpFamily::kTranspose},
    {OpKind::kConcat, "Concat", OpFamily::kConcat},
    {OpKind::kSlice, "Slice", OpFamily::kSlice},
    {OpKind::kFlashAttention, "FlashAttention", OpFamily::kAttention},
    {OpKind::kRotary, "Rotary", OpFamily::kRotary},
    {OpKind::kCrossEntropy, "CrossEntropy", OpFamily::kCrossEntropy},
    {OpKind::kMoEDispatch, "MoEDispatch", OpFamily::kMoE},
    {OpKind::kMoECombine, "MoECombine", OpFamily::kMoE},
    {OpKind::kOpaque, "Opaque", OpFamily::kOpaque},
}};

constexpr bool tableFollowsEnumOrder() {
  for (size_t i = 0; i < kOpKinds.size(); ++i) {
    if (static_cast<size_t>(kOpKinds[i].kind) != i) return false;
  }
  return kOpKinds.size() == static_cast<size_t>(OpKind::kOpaque) + 1;
}
static_assert(tableFollowsEnumOrder(), "kOpKinds must list every OpKind in declaration order");

const OpKindInfo& kindInfo(OpKind kind) { return kOpKinds.at(static_cast<size_t>(kind)); }

bool equalsIgnoringCase(std::string_view lhs, std::string_view rhs) {
  return std::ranges::equal(lhs, rhs, [](unsigned char a, unsigned char b) {
    return std::tolower(a) == std::tolower(b);
  });
}

}  // namespace

OpFamily familyOf(OpKind kind) { return kindInfo(kind).family; }

std::string_view opKindName(OpKind kind) { return kindInfo(kind).name; }

Expected<OpKind> parseOpKind(std::string_view name) {
  for (const auto& info : kOpKinds) {
    if (info.name == name) return info.kind;
  }
  // Names are case-sensitive; a near miss such as "matmul" gets a hint instead of the whole list.
  for (const auto& info : kOpKinds) {
    if (equalsIgnoringCase(info.name, name)) {
      return Error{fmt::format("unknown op kind '{}' (did you mean '{}'?)", name, info.name)};
    }
  }
  return Error{fmt::format("unknown op kind '{}'", name)};
}

const std::vector<OpKind>& allOpKinds() {
  static const std::vector<OpKind> kinds = [] {
    std::vector<OpKind> all;
    for (const auto& info : kOpKinds) all.push_back(info.kind);
    return all;
  }();
  return kinds;
}

bool isAttentionCore(OpKind kind) {
  return kind == OpKind::kFlashAttention || kind == OpKind::kSoftmax;
}

}  // namespace autopar::ir
