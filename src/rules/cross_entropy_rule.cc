/// \file
/// CrossEntropy: logits [t..., v], labels [t...] -> the scalar mean loss.
///
/// Token dims t are reduction factors (the first is the batch): a device with a slice of the
/// tokens computes its share of the mean, sum(loss over its tokens) / (all tokens), and the scalar
/// is a partial sum over their axes.
///
/// The vocab v is cut the Megatron way (vocab-parallel cross-entropy): each device holds a slice
/// of every token's logits and all-reduces three per-token values over v's axis in the forward
/// pass (the row max, the sum of exponentials and the target logit) and nothing in the backward
/// pass. After those the loss is complete, so v is not a reduction factor: it is a pass-through
/// factor that appears only in the logits, which leaves the output replicated over v's axis, and
/// its communication is the rule's InternalCollective (per token 3 values forward, none backward,
/// divided by the cuts of the token factors).
///   logits [8,512,32000], labels [8,512] -> []: factors t0 (batch, reduction), t1 (reduction),
///   v (internal all-reduce of 3*8*512 values forward).

#include <fmt/format.h>

#include "rules/family_rules.h"

namespace autopar::rules {
namespace {

/// Per-token values vocab-parallel cross-entropy all-reduces, as Megatron-LM's
/// _VocabParallelCrossEntropy does: forward the max logit (MAX), the target logit and the sum of
/// exponentials (SUM). Its backward all-reduces nothing: the gradient softmax - onehot(target)
/// comes from the softmax slice saved in the forward pass, times the (replicated) loss gradient.
constexpr int64_t kForwardValuesPerToken = 3;
constexpr int64_t kBackwardValuesPerToken = 0;

}  // namespace

Expected<ShardingRule> crossEntropyRule(const OpTypes& op) {
  if (auto status = expectInputCount(op, 2); !status) return status.error();
  if (auto status = expectRank(op, 0, 1, /*minimum=*/true); !status) return status.error();
  const ir::Shape& logits = op.inputs[0].shape;
  const size_t tokenRank = logits.size() - 1;
  if (auto status = expectRank(op, 1, tokenRank); !status) return status.error();
  if (!op.outputs[0].shape.empty()) {
    return Error{fmt::format("output must be a scalar, got rank {}", op.outputs[0].shape.size())};
  }
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  std::vector<std::vector<int>> tokenDims;
  std::vector<int> tokenFactors;
  int64_t tokens = 1;
  for (size_t dim = 0; dim < tokenRank; ++dim) {
    tokenFactors.push_back(builder.factor(indexedName("t", dim, tokenRank), FactorKind::kReduction,
                                          /*isBatch=*/dim == 0));
    tokenDims.push_back({tokenFactors.back()});
    tokens *= logits[dim];
  }
  const int vocab = builder.factor("v");
  std::vector<std::vector<int>> logitDims = tokenDims;
  logitDims.push_back({vocab});
  builder.operand(0, logitDims).operand(1, tokenDims).result(0, {});
  builder.internal(InternalCollective{vocab, kForwardValuesPerToken * tokens,
                                      kBackwardValuesPerToken * tokens, tokenFactors});
  return std::move(builder).build();
}

}  // namespace autopar::rules
