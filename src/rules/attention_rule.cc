/// \file
/// The fused transformer ops, whose hidden dim packs heads and head_dim: [b, s, heads*d].
///
/// FlashAttention q [b,s,hq*d], k and v [b,skv,hk*d] -> [b,s,hq*d] (hk = numKvHeads, GQA):
///   b     batch, shared by all;
///   s     the query sequence, passes through to the output;
///   heads major part of dim 2: hq heads on q and the output, hk on k and v. One cut splits both,
///         so it must divide both (query-head group g reads kv head g / (hq/hk) on the same
///         device);
///   skv   the key/value sequence, needs replication: every query row attends to all keys, so
///         cutting s (context parallelism) shows up as a redistribution that all-gathers K and V;
///   d     head_dim, minor part of dim 2, needs replication (a dot product over d per score).
/// Example: q [2,128,32*64], k/v [2,128,8*64] -> factors b(2) s(128) heads(32 on q, 8 on k/v)
/// skv(128) d(64); ((1,1,4),(1,1,4),(1,1,4)) cuts heads by 4: 8 query and 2 kv heads per device.
///
/// Rotary x [b,s,h*d] -> same: b (batch), s, heads and head_dim d; d needs replication because
/// rotary rotates pairs inside each head.

#include <fmt/format.h>

#include "rules/family_rules.h"

namespace autopar::rules {
namespace {

// The head count `heads` must divide dim 2 of inputs[index]; returns the head dim.
Expected<int64_t> headDim(const OpTypes& op, size_t index, std::string_view field, int64_t heads) {
  if (auto status = expectRank(op, index, 3); !status) return status.error();
  if (heads <= 0) return Error{fmt::format("{} is {}, expected a positive count", field, heads)};
  const int64_t hidden = op.inputs[index].shape[2];
  if (hidden % heads != 0) {
    return Error{fmt::format("inputs[{}] dim 2 of size {} does not split into {} = {} heads", index,
                             hidden, field, heads)};
  }
  return hidden / heads;
}

// Dim 2 as (heads, head_dim) parts.
DimFactors headParts(int heads, int64_t headCount, int headDimFactor, int64_t headDimSize) {
  return {FactorPart{heads, headCount}, FactorPart{headDimFactor, headDimSize}};
}

}  // namespace

Expected<ShardingRule> attentionRule(const OpTypes& op) {
  if (auto status = expectInputCount(op, 3); !status) return status.error();
  const int64_t queryHeads = op.attrs.numHeads;
  const int64_t kvHeads = op.attrs.numKvHeads == 0 ? queryHeads : op.attrs.numKvHeads;
  auto queryHeadDim = headDim(op, 0, "attrs.numHeads", queryHeads);
  if (!queryHeadDim) return queryHeadDim.error();
  for (size_t index : {1, 2}) {
    auto kvHeadDim = headDim(op, index, "attrs.numKvHeads", kvHeads);
    if (!kvHeadDim) return kvHeadDim.error();
    if (*kvHeadDim != *queryHeadDim) {
      return Error{fmt::format("inputs[{}] head_dim is {} but inputs[0] head_dim is {}", index,
                               *kvHeadDim, *queryHeadDim)};
    }
  }
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  const int batch = builder.factor("b", FactorKind::kPassThrough, /*isBatch=*/true);
  const int sequence = builder.factor("s");
  const int heads = builder.factor("heads");
  const int kvSequence = builder.factor("skv", FactorKind::kNeedReplication);
  const int headDimFactor = builder.factor("d", FactorKind::kNeedReplication);
  const int64_t seq = op.inputs[0].shape[1];
  const int64_t kvSeq = op.inputs[1].shape[1];
  const std::vector<DimFactors> queryDims{
      {FactorPart{batch, op.inputs[0].shape[0]}},
      {FactorPart{sequence, seq}},
      headParts(heads, queryHeads, headDimFactor, *queryHeadDim)};
  std::vector<DimFactors> kvDims = queryDims;
  kvDims[1] = {FactorPart{kvSequence, kvSeq}};
  kvDims[2] = headParts(heads, kvHeads, headDimFactor, *queryHeadDim);
  builder.operandParts(0, queryDims).operandParts(1, kvDims).operandParts(2, kvDims);
  builder.resultParts(0, queryDims);
  return std::move(builder).build();
}

Expected<ShardingRule> rotaryRule(const OpTypes& op) {
  if (auto status = expectInputCount(op, 1); !status) return status.error();
  const int64_t headCount = op.attrs.numHeads;
  auto dim = headDim(op, 0, "attrs.numHeads", headCount);
  if (!dim) return dim.error();
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  const int batch = builder.factor("b", FactorKind::kPassThrough, /*isBatch=*/true);
  const int sequence = builder.factor("s");
  const int heads = builder.factor("heads");
  const int headDimFactor = builder.factor("d", FactorKind::kNeedReplication);
  const ir::Shape& shape = op.inputs[0].shape;
  const std::vector<DimFactors> dims{{FactorPart{batch, shape[0]}},
                                     {FactorPart{sequence, shape[1]}},
                                     headParts(heads, headCount, headDimFactor, *dim)};
  builder.operandParts(0, dims).resultParts(0, dims);
  return std::move(builder).build();
}

}  // namespace autopar::rules
