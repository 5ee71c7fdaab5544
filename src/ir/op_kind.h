#pragma once
/// \file
/// The operator kinds autopar understands and the family each belongs to. Per-family knowledge
/// (shape inference, FLOPs, backward) lives in ir/ops/<family>.cc; sharding rules live in rules/.

#include <string_view>
#include <vector>

#include "util/expected.h"

namespace autopar::ir {

enum class OpKind {
  // matmul family
  kMatMul,       ///< [..., m, k] x [k, n] -> [..., m, n]; attrs.transposeA/B. Leading dims of A are
                 ///< batch.
  kBatchMatMul,  ///< [a..., b..., m, k] x [b..., k, n] -> [a..., b..., m, n]: B's batch dims
                 ///< match A's last ones; A's leading a... are broadcast over B (torch.matmul).
  // elementwise binary, numpy broadcasting
  kAdd,
  kSub,
  kMul,
  kDiv,
  // elementwise unary
  kReLU,
  kGeLU,
  kSiLU,
  kTanh,
  kSigmoid,
  kExp,
  kNeg,
  kSqrt,
  kCast,     ///< attrs.castTo
  kDropout,  ///< attrs.dropoutRate; keeps a 1-byte mask for backward
  // normalisation and softmax
  kSoftmax,    ///< over attrs.axis (default last)
  kLayerNorm,  ///< inputs: x, gamma, beta; normalises the last dim
  kRMSNorm,    ///< inputs: x, gamma; normalises the last dim
  // reductions over attrs.axes, attrs.keepDims
  kReduceSum,
  kReduceMean,
  kReduceMax,
  // data movement
  kGather,   ///< inputs: table [v, h...], indices [i...] -> [i..., h...] (embedding lookup on axis
             ///< 0)
  kReshape,  ///< attrs.newShape (one -1 allowed)
  kTranspose,  ///< attrs.perm
  kConcat,     ///< along attrs.axis
  kSlice,      ///< attrs.starts/ends per dim (half-open)
  // fused transformer ops
  kFlashAttention,  ///< q [b,s,hq*d], k [b,s,hk*d], v [b,s,hk*d] -> [b,s,hq*d];
                    ///< attrs.numHeads/numKvHeads, causal
  kRotary,          ///< x [b,s,h*d] -> same; rotates pairs inside each head; attrs.numHeads
  kCrossEntropy,    ///< logits [..., v], labels [...] (int) -> scalar mean loss
  // mixture of experts (ir/ops/moe.cc)
  kMoEDispatch,  ///< x [b,s,h], logits [b,s,E] -> [b,E,s*topK/E,h]; tokens to their topK experts
  kMoECombine,   ///< y [b,E,c,h], logits [b,s,E] -> [b,s,h]; each token's topK outputs, weighted
  // an op autopar does not understand (ir/ops/opaque.cc)
  kOpaque,  ///< any inputs -> attrs.outputTypes, given rather than inferred; attrs.opaqueType
            ///< names it (an untranslated ONNX op). Its rule replicates it on every device.
};

/// Families group kinds that share shape inference, cost formulas and sharding rules.
enum class OpFamily {
  kMatMul,
  kElementwiseBinary,
  kElementwiseUnary,
  kSoftmax,
  kNorm,
  kReduce,
  kGather,
  kReshape,
  kTranspose,
  kConcat,
  kSlice,
  kAttention,
  kRotary,
  kCrossEntropy,
  kMoE,
  kOpaque,
};

OpFamily familyOf(OpKind kind);

/// The attention core Korthikanti et al. 2022 recompute selectively: ops whose saved activations
/// grow with the square of the sequence (softmax over scores) or that are fused attention.
bool isAttentionCore(OpKind kind);

/// The name used in graph JSON and plans, e.g. "MatMul", "ReLU", "FlashAttention".
std::string_view opKindName(OpKind kind);

/// Parses an op kind name (exact, case-sensitive, as opKindName prints it).
Expected<OpKind> parseOpKind(std::string_view name);

/// Every kind, in declaration order.
const std::vector<OpKind>& allOpKinds();

}  // namespace autopar::ir
