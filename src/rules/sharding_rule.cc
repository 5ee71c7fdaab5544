#include "rules/sharding_rule.h"

#include <fmt/format.h>

#include <cassert>
#include <utility>

#include "rules/family_rules.h"

namespace autopar::rules {

ShardingRuleBuilder::ShardingRuleBuilder(std::vector<ir::TensorType> inputs,
                                         std::vector<ir::TensorType> outputs)
    : inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  rule_.operands.resize(inputs_.size());
  rule_.results.resize(outputs_.size());
}

int ShardingRuleBuilder::factor(std::string name, FactorKind kind, bool isBatch) {
  rule_.factors.push_back(Factor{std::move(name), kind, isBatch});
  return static_cast<int>(rule_.factors.size()) - 1;
}

ShardingRuleBuilder& ShardingRuleBuilder::internal(InternalCollective collective) {
  rule_.internal.push_back(std::move(collective));
  return *this;
}

namespace {

// The size of `factor` in the first single-factor dim that holds it, or 0 when none does yet.
int64_t knownFactorSize(const ShardingRule& rule, int factor) {
  for (const auto* tensors : {&rule.operands, &rule.results}) {
    for (const auto& dims : *tensors) {
      for (const DimFactors& parts : dims) {
        if (parts.size() == 1 && parts[0].factor == factor) return parts[0].size;
      }
    }
  }
  return 0;
}

}  // namespace

std::vector<DimFactors> ShardingRuleBuilder::partsFor(
    const ir::TensorType& type, const std::vector<std::vector<int>>& dimFactors) const {
  assert(type.shape.size() == dimFactors.size() && "one factor list per dim");
  std::vector<DimFactors> dims(dimFactors.size());
  for (size_t dim = 0; dim < dimFactors.size(); ++dim) {
    int64_t rest = type.shape[dim];
    int unknownPart = -1;
    for (int factor : dimFactors[dim]) {
      assert(factor >= 0 && factor < static_cast<int>(rule_.factors.size()) && "unknown factor");
      const int64_t size = dimFactors[dim].size() == 1 ? rest : knownFactorSize(rule_, factor);
      if (size == 0) {
        assert(unknownPart < 0 && "at most one factor of a dim may have an unknown size");
        unknownPart = static_cast<int>(dims[dim].size());
      } else {
        rest /= size;
      }
      dims[dim].push_back(FactorPart{factor, size});
    }
    if (unknownPart >= 0) dims[dim][unknownPart].size = rest;
  }
  return dims;
}

ShardingRuleBuilder& ShardingRuleBuilder::operand(int index,
                                                  const std::vector<std::vector<int>>& dimFactors) {
  return operandParts(index, partsFor(inputs_.at(index), dimFactors));
}

ShardingRuleBuilder& ShardingRuleBuilder::result(int index,
                                                 const std::vector<std::vector<int>>& dimFactors) {
  return resultParts(index, partsFor(outputs_.at(index), dimFactors));
}

ShardingRuleBuilder& ShardingRuleBuilder::operandParts(int index, std::vector<DimFactors> dims) {
  assert(dims.size() == inputs_.at(index).shape.size() && "one entry per dim");
  rule_.operands.at(index) = std::move(dims);
  return *this;
}

ShardingRuleBuilder& ShardingRuleBuilder::resultParts(int index, std::vector<DimFactors> dims) {
  assert(dims.size() == outputs_.at(index).shape.size() && "one entry per dim");
  rule_.results.at(index) = std::move(dims);
  return *this;
}

ShardingRule ShardingRuleBuilder::build() && {
  for (size_t index = 0; index < inputs_.size(); ++index) {
    assert(rule_.operands[index].size() == inputs_[index].shape.size() && "operand not mapped");
    rule_.operandShapes.push_back(inputs_[index].shape);
  }
  for (size_t index = 0; index < outputs_.size(); ++index) {
    assert(rule_.results[index].size() == outputs_[index].shape.size() && "result not mapped");
    rule_.resultShapes.push_back(outputs_[index].shape);
  }
  return std::move(rule_);
}

ShardingRule pointwiseRule(const std::vector<ir::TensorType>& inputs, const ir::TensorType& output,
                           bool firstIsBatch) {
  ShardingRuleBuilder builder(inputs, {output});
  const size_t rank = output.shape.size();
  std::vector<std::vector<int>> outputDims;
  for (size_t dim = 0; dim < rank; ++dim) {
    const bool isBatch = firstIsBatch && dim == 0;
    outputDims.push_back(
        {builder.factor(fmt::format("d{}", dim), FactorKind::kPassThrough, isBatch)});
  }
  for (size_t index = 0; index < inputs.size(); ++index) {
    const ir::Shape& shape = inputs[index].shape;
    // numpy broadcasting aligns shapes on the right.
    const size_t offset = rank - shape.size();
    std::vector<std::vector<int>> inputDims(shape.size());
    for (size_t dim = 0; dim < shape.size(); ++dim) {
      const bool broadcast = shape[dim] == 1 && output.shape[dim + offset] != 1;
      if (!broadcast) inputDims[dim] = outputDims[dim + offset];
    }
    builder.operand(static_cast<int>(index), inputDims);
  }
  builder.result(0, outputDims);
  return std::move(builder).build();
}

namespace {

std::string tensorsToString(const ShardingRule& rule,
                            const std::vector<std::vector<DimFactors>>& tensors) {
  std::vector<std::string> shapes;
  for (const auto& dims : tensors) {
    std::vector<std::string> names;
    for (const DimFactors& parts : dims) {
      std::vector<std::string> partNames;
      for (const FactorPart& part : parts) partNames.push_back(rule.factors[part.factor].name);
      if (partNames.empty()) {
        names.emplace_back("_");
      } else if (partNames.size() == 1) {
        names.push_back(partNames[0]);
      } else {
        names.push_back(fmt::format("({})", fmt::join(partNames, ", ")));
      }
    }
    shapes.push_back(fmt::format("[{}]", fmt::join(names, ", ")));
  }
  return fmt::format("({})", fmt::join(shapes, ", "));
}

// " label={a, b}" for the factors `selected` picks, or nothing when it picks none.
template <class Pred>
std::string factorSet(const ShardingRule& rule, std::string_view label, Pred selected) {
  std::vector<std::string> names;
  for (size_t f = 0; f < rule.factors.size(); ++f) {
    if (selected(static_cast<int>(f))) names.push_back(rule.factors[f].name);
  }
  if (names.empty()) return "";
  return fmt::format(" {}={{{}}}", label, fmt::join(names, ", "));
}

}  // namespace

std::string ruleToString(const ShardingRule& rule) {
  auto hasKind = [&](FactorKind kind) {
    return [&rule, kind](int f) { return rule.factors[f].kind == kind; };
  };
  auto isInternal = [&](int f) {
    for (const InternalCollective& collective : rule.internal) {
      if (collective.factor == f) return true;
    }
    return false;
  };
  return tensorsToString(rule, rule.operands) + " -> " + tensorsToString(rule, rule.results) +
         factorSet(rule, "batch", [&](int f) { return rule.factors[f].isBatch; }) +
         factorSet(rule, "reduction", hasKind(FactorKind::kReduction)) +
         factorSet(rule, "need_replication", hasKind(FactorKind::kNeedReplication)) +
         factorSet(rule, "internal", isInternal);
}

namespace {

Expected<ShardingRule> familyRule(const OpTypes& op) {
  switch (ir::familyOf(op.kind)) {
    case ir::OpFamily::kMatMul:
      return matmulRule(op);
    case ir::OpFamily::kElementwiseBinary:
    case ir::OpFamily::kElementwiseUnary:
      return elementwiseRule(op);
    case ir::OpFamily::kSoftmax:
      return softmaxRule(op);
    case ir::OpFamily::kNorm:
      return normRule(op);
    case ir::OpFamily::kReduce:
      return reduceRule(op);
    case ir::OpFamily::kGather:
      return gatherRule(op);
    case ir::OpFamily::kReshape:
      return reshapeRule(op);
    case ir::OpFamily::kTranspose:
      return transposeRule(op);
    case ir::OpFamily::kConcat:
      return concatRule(op);
    case ir::OpFamily::kSlice:
      return sliceRule(op);
    case ir::OpFamily::kAttention:
      return attentionRule(op);
    case ir::OpFamily::kRotary:
      return rotaryRule(op);
    case ir::OpFamily::kCrossEntropy:
      return crossEntropyRule(op);
    case ir::OpFamily::kMoE:
      return moeRule(op);
    case ir::OpFamily::kOpaque:
      return opaqueRule(op);
  }
  return Error{"no sharding rule for this op family"};
}

}  // namespace

Expected<ShardingRule> shardingRuleFor(const ir::Graph& graph, const ir::Op& op) {
  const OpTypes types{op.kind, op.attrs, graph.inputTypes(op), graph.outputTypes(op)};
  const std::string kindName(ir::opKindName(op.kind));
  // Graph::addOp gives an op the outputs inference gives it: one for every family but Opaque,
  // whose rule takes any number.
  if (types.outputs.empty()) return Error{"expected at least one output"}.in(kindName);
  auto rule = familyRule(types);
  if (!rule) return rule.error().in(kindName);
  return rule;
}

}  // namespace autopar::rules
