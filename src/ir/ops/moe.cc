/// \file
/// Mixture-of-experts token movement: Megatron-Core's MoE token dispatcher (permute, then
/// unpermute), after GShard (Lepikhin et al. 2020).
///   MoEDispatch x [b, s, h], logits [b, s, E] -> [b, E, c, h], c = s * topK / E
///   MoECombine  y [b, E, c, h], logits [b, s, E] -> [b, s, h]
/// Dispatch picks each token's attrs.topK experts, those of its largest router logits, and copies
/// the token into those experts' slots; Combine sums each token's topK expert outputs weighted by
/// the softmax of their logits (Mixtral's routing: the softmax over the k chosen, which equals the
/// full softmax's top k renormalised). c is the slots per sample and expert when the router
/// spreads the tokens
/// evenly: every expert gets s * topK / E of a sample's tokens, the balanced load the router's
/// auxiliary loss aims for. (Megatron-Core's dropless dispatcher sends what the router picks,
/// so real loads vary around this; a capacity factor of 1 would drop the excess instead.)
///   MoEDispatch x [2, 4096, 4096], logits [2, 4096, 8], topK 2 -> [2, 8, 1024, 4096]

#include <fmt/format.h>

#include "ir/ops/families.h"

namespace autopar::ir::ops {
namespace {

/// The routing table Dispatch keeps for its backward: one int32 expert slot per token and choice.
constexpr int64_t kSlotIndexBytes = 4;
/// Combine's softmax over a token's chosen logits: an exp, a sum and a divide per choice; its
/// backward a dot product and a scale per choice.
constexpr double kSoftmaxFlopsPerChoice = 3;
constexpr double kSoftmaxBackwardFlopsPerChoice = 2;

Status checkTopK(const OpAttrs& attrs, int64_t experts) {
  if (attrs.topK < 1 || attrs.topK > experts) {
    return Error{fmt::format("attrs.topK is {}, expected 1 to the {} experts (inputs[1] dim 2)",
                             attrs.topK, experts)};
  }
  return {};
}

Expected<TensorType> inferDispatch(const OpAttrs& attrs, std::span<const TensorType> inputs) {
  if (auto status = expectRank(inputs, 0, 3); !status) return status.error();
  const Shape& x = inputs[0].shape;
  const Shape& logits = inputs[1].shape;
  if (logits[0] != x[0] || logits[1] != x[1]) {
    return Error{fmt::format("inputs[1] tokens {} differ from inputs[0] tokens {}",
                             shapeToString({logits[0], logits[1]}), shapeToString({x[0], x[1]}))};
  }
  const int64_t experts = logits[2];
  if (auto status = checkTopK(attrs, experts); !status) return status.error();
  if (x[1] * attrs.topK % experts != 0) {
    return Error{fmt::format(
        "inputs[0] dim 1 is {}: {} tokens x topK {} do not spread evenly over {} experts", x[1],
        x[1], attrs.topK, experts)};
  }
  return TensorType{{x[0], experts, x[1] * attrs.topK / experts, x[2]}, inputs[0].dtype};
}

Expected<TensorType> inferCombine(const OpAttrs& attrs, std::span<const TensorType> inputs) {
  if (auto status = expectRank(inputs, 0, 4); !status) return status.error();
  const Shape& y = inputs[0].shape;
  const Shape& logits = inputs[1].shape;
  const int64_t experts = logits[2];
  if (auto status = checkTopK(attrs, experts); !status) return status.error();
  if (y[0] != logits[0] || y[1] != experts || y[2] * experts != logits[1] * attrs.topK) {
    return Error{fmt::format(
        "inputs[0] shape {} is not [b, E, s * topK / E, h] for inputs[1] [b, s, E] = {} and topK "
        "{}",
        shapeToString(y), shapeToString(logits), attrs.topK)};
  }
  return TensorType{{y[0], logits[1], y[3]}, inputs[0].dtype};
}

Expected<TensorType> inferMoE(OpKind kind, const OpAttrs& attrs,
                              std::span<const TensorType> inputs) {
  if (auto status = expectInputCount(inputs, 2); !status) return status.error();
  if (auto status = expectRank(inputs, 1, 3); !status) return status.error();
  if (auto status = expectFloatingDType(inputs, 1); !status) return status.error();
  return kind == OpKind::kMoEDispatch ? inferDispatch(attrs, inputs) : inferCombine(attrs, inputs);
}

/// Tokens times their choices: b * s * topK.
double choices(const TypedOp& op) {
  const Shape& logits = op.inputs[1].shape;
  return static_cast<double>(logits[0] * logits[1] * op.attrs.topK);
}

// Dispatch: the top k of each token's E logits, topK passes of E compares; the copies are data
// movement. Combine: the softmax over the chosen logits and a multiply-add per routed element.
double moeFlops(const TypedOp& op) {
  if (op.kind == OpKind::kMoEDispatch) {
    return static_cast<double>(op.attrs.topK) * elements(op.inputs[1]);
  }
  return 2 * elements(op.inputs[0]) + kSoftmaxFlopsPerChoice * choices(op);
}

// Dispatch's backward scatter-adds each routed gradient back onto its token (one add per routed
// element) and keeps the routing table; the choice itself has no gradient. Combine's backward
// scales the output gradient into each routed slot (one multiply per element), takes a dot
// product per slot for the weights' gradient (two per element) and goes back through the
// softmax; it keeps both inputs.
BackwardRule moeBackward(const TypedOp& op) {
  if (op.kind == OpKind::kMoEDispatch) {
    const auto indexBytes = static_cast<int64_t>(choices(op)) * kSlotIndexBytes;
    return BackwardRule{elements(op.output), {savedExtra(indexBytes)}};
  }
  return BackwardRule{3 * elements(op.inputs[0]) + kSoftmaxBackwardFlopsPerChoice * choices(op),
                      {savedInput(0), savedInput(1)}};
}

constexpr FamilySemantics kMoE{inferMoE, moeFlops, streamingBytes, moeBackward};

}  // namespace

const FamilySemantics& moeFamily() { return kMoE; }

}  // namespace autopar::ir::ops
