#pragma once
/// \file
/// An op's sharding rule as a list of factors, the way an einsum names its indices (after OpenXLA
/// Shardy). MatMul [m,k] x [k,n] -> [m,n] has pass-through factors m and n and a reduction factor
/// k. Each tensor dim maps to a list of factors, major first: a reshape [b, s, h*d] -> [b, s, h, d]
/// maps its input dim 2 to factors (h, d).
///
/// A strategy assigns a cut count to each factor. One generic engine (sharded_op.h) derives from
/// the factors the device matrix, the input and output layouts, the partial sums, and the backward
/// communication. Rule files in rules/ describe ops; they never cost or search.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "util/expected.h"

namespace autopar::rules {

/// How cutting a factor affects the op's outputs.
///
/// A kPassThrough factor usually appears in inputs and outputs, and its cut splits both. It may
/// also appear only in inputs: the outputs are then replicated over its device-matrix axis, which
/// is only true when the op makes them whole by communicating inside itself; such a rule lists an
/// InternalCollective for the factor. Vocab-parallel cross-entropy is the case: its vocab factor v
/// is cut without leaving partial sums, because the loss is complete after the internal
/// all-reduces (a kReduction v would wrongly ask for one more all-reduce of the loss).
enum class FactorKind {
  kPassThrough,      ///< splits inputs and outputs alike (m and n of MatMul); see above
  kReduction,        ///< contracted away: a cut leaves partial sums in the outputs (k of MatMul)
  kNeedReplication,  ///< may not be cut (the softmax axis, a norm's normalised dim)
};

struct Factor {
  std::string name;  ///< short and readable: "m", "k", "n", "batch", "heads"
  FactorKind kind = FactorKind::kPassThrough;
  bool isBatch = false;  ///< the sample dimension; the default (data-parallel) strategy cuts it
};

/// One factor's part of a tensor dim and its extent in that dim.
struct FactorPart {
  int factor = 0;
  int64_t size = 0;
};

/// The factors of one tensor dim, major first. Empty: the dim belongs to no factor and must not be
/// cut (a broadcast dim of size 1, a sliced dim).
using DimFactors = std::vector<FactorPart>;

/// Communication an op performs inside itself when a factor is cut, beyond what its layouts
/// express. Vocab-parallel cross-entropy all-reduces the row max, the sum of exponentials and the
/// target logit over the vocab axis: per token three values forward and none backward (Megatron's
/// backward builds the gradient from the softmax slice it saved). Element counts are at full
/// size; each device moves them divided by the cuts of the `shardedBy` factors.
struct InternalCollective {
  int factor = 0;  ///< the cut factor whose device-matrix axis the all-reduce runs over
  int64_t forwardElements = 0;
  int64_t backwardElements = 0;
  std::vector<int> shardedBy;  ///< factors whose cuts divide the element counts (the batch)
};

struct ShardingRule {
  std::vector<Factor> factors;
  std::vector<InternalCollective> internal;
  std::vector<std::vector<DimFactors>> operands;  ///< per input, per dim
  std::vector<std::vector<DimFactors>> results;   ///< per output, per dim
  /// Full shapes of the inputs and outputs, for layouts and for dims that map to no factor.
  std::vector<ir::Shape> operandShapes;
  std::vector<ir::Shape> resultShapes;
};

/// Builds rules readably:
///   ShardingRuleBuilder b(inputs, outputs);
///   int m = b.factor("m"), k = b.factor("k", FactorKind::kReduction), n = b.factor("n");
///   b.operand(0, {{m}, {k}}).operand(1, {{k}, {n}}).result(0, {{m}, {n}});
/// Factor sizes are read from the tensor shapes passed to the constructor. A dim listing several
/// factors takes each factor's size from an earlier single-factor dim of the same factor, and at
/// most one unknown factor gets the rest of the dim: after result(0, {{b}, {s}, {h}, {d}}),
/// operand(0, {{b}, {s}, {h, d}}) gives dim 2 the parts (h, size of h) and (d, size of d).
/// operandParts()/resultParts() give the sizes explicitly. Misuse (a rank mismatch, an unknown
/// factor) is a programmer error and asserts.
class ShardingRuleBuilder {
 public:
  ShardingRuleBuilder(std::vector<ir::TensorType> inputs, std::vector<ir::TensorType> outputs);

  /// Adds a factor and returns its index; factors are numbered in the order they are added, which
  /// is also the order of their device-matrix axes (outermost first).
  int factor(std::string name, FactorKind kind = FactorKind::kPassThrough, bool isBatch = false);

  /// Adds an InternalCollective (see above).
  ShardingRuleBuilder& internal(InternalCollective collective);

  /// Maps each dim of input `index` to the listed factors (one list per dim; {} for none). A dim
  /// with exactly one factor takes that dim's size as the factor's size.
  ShardingRuleBuilder& operand(int index, const std::vector<std::vector<int>>& dimFactors);
  ShardingRuleBuilder& result(int index, const std::vector<std::vector<int>>& dimFactors);
  /// Explicit form for dims of several factors: per dim, the (factor, size) parts.
  ShardingRuleBuilder& operandParts(int index, std::vector<DimFactors> dims);
  ShardingRuleBuilder& resultParts(int index, std::vector<DimFactors> dims);

  [[nodiscard]] ShardingRule build() &&;

 private:
  std::vector<DimFactors> partsFor(const ir::TensorType& type,
                                   const std::vector<std::vector<int>>& dimFactors) const;
  std::vector<ir::TensorType> inputs_;
  std::vector<ir::TensorType> outputs_;
  ShardingRule rule_;
};

/// Pointwise rule (Shardy's buildPointwise): one pass-through factor per output dim, with numpy
/// broadcasting; an input dim broadcast from size 1 maps to no factor. The first factor is marked
/// as batch when `firstIsBatch`.
ShardingRule pointwiseRule(const std::vector<ir::TensorType>& inputs, const ir::TensorType& output,
                           bool firstIsBatch = true);

/// The rule in an einsum-like notation, for tests, logs and --dump-after: operands, then results,
/// then the factors by kind (sets left out when empty); "_" is a dim of no factor and "(h, d)" a
/// dim of several factors. MatMul X [64,32] x W [32,128]:
///   "([m, k], [k, n]) -> ([m, n]) batch={m} reduction={k}"
/// Vocab-parallel cross-entropy: "([t0, t1, v], [t0, t1]) -> ([]) batch={t0} reduction={t0, t1}
/// internal={v}".
std::string ruleToString(const ShardingRule& rule);

/// The rule of an op in a graph, dispatched on its family (rules/<family>_rule.cc).
Expected<ShardingRule> shardingRuleFor(const ir::Graph& graph, const ir::Op& op);

}  // namespace autopar::rules
