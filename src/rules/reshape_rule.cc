/// \file
/// Reshape as factors, the way Shardy decomposes it. Both shapes are walked together, ignoring
/// size-1 dims (they map to no factor), and cut into groups of consecutive dims with equal
/// products. Inside a group, dims split into factors where one size divides the other:
///   [b, s, h] -> [b*s, h]     factors b, s, h; input dims {b},{s},{h}; output (b,s),{h}
///   [8, 6] -> [2, 4, 6]       factors 2, 4, 6; input dim 0 = parts (2,4); output {2},{4},{6}
///   [2, 12] -> [4, 6]         factors 2, 2, 6; input dim 1 = parts (2,6); output (2,2),{6}
/// A group without such a decomposition, [6,4] -> [4,6], maps to no factors: its dims cannot be
/// cut. The first factor is the batch when it is the major part of input dim 0.

#include <fmt/format.h>

#include <optional>

#include "rules/family_rules.h"

namespace autopar::rules {
namespace {

// One factor of a group before it is added to the builder: its size and the dims it is part of.
struct GroupFactor {
  int64_t size = 0;
  size_t inputDim = 0;
  size_t outputDim = 0;
};

// Positions of the dims whose size is not 1.
std::vector<size_t> nonUnitDims(const ir::Shape& shape) {
  std::vector<size_t> dims;
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    if (shape[dim] != 1) dims.push_back(dim);
  }
  return dims;
}

// Splits one group (input dims `in` and output dims `out`, equal products) into factors, major
// first, or nothing when some input and output sizes do not divide one another.
std::optional<std::vector<GroupFactor>> decomposeGroup(const ir::Shape& input,
                                                       const std::vector<size_t>& in,
                                                       const ir::Shape& output,
                                                       const std::vector<size_t>& out) {
  std::vector<GroupFactor> factors;
  size_t i = 0;
  size_t o = 0;
  int64_t inRest = input[in[0]];
  int64_t outRest = output[out[0]];
  while (i < in.size() && o < out.size()) {
    const int64_t size = std::min(inRest, outRest);
    if (std::max(inRest, outRest) % size != 0) return std::nullopt;
    factors.push_back(GroupFactor{size, in[i], out[o]});
    inRest /= size;
    outRest /= size;
    if (inRest == 1 && ++i < in.size()) inRest = input[in[i]];
    if (outRest == 1 && ++o < out.size()) outRest = output[out[o]];
  }
  return factors;
}

// Adds a group's factors to the builder and the dims' part lists.
void addGroup(ShardingRuleBuilder& builder, const std::vector<GroupFactor>& group,
              const ir::Shape& input, std::vector<DimFactors>& inputDims,
              std::vector<DimFactors>& outputDims) {
  for (const GroupFactor& part : group) {
    const bool wholeDim = part.size == input[part.inputDim];
    const size_t partIndex = inputDims[part.inputDim].size();
    const std::string name = wholeDim ? fmt::format("d{}", part.inputDim)
                                      : fmt::format("d{}.{}", part.inputDim, partIndex);
    const bool isBatch = part.inputDim == 0 && partIndex == 0;
    const int factor = builder.factor(name, FactorKind::kPassThrough, isBatch);
    inputDims[part.inputDim].push_back(FactorPart{factor, part.size});
    outputDims[part.outputDim].push_back(FactorPart{factor, part.size});
  }
}

}  // namespace

Expected<ShardingRule> reshapeRule(const OpTypes& op) {
  if (auto status = expectInputCount(op, 1); !status) return status.error();
  const ir::Shape& input = op.inputs[0].shape;
  const ir::Shape& output = op.outputs[0].shape;
  if (ir::numElements(input) != ir::numElements(output)) {
    return Error{fmt::format("output {} has {} elements but inputs[0] {} has {}",
                             ir::shapeToString(output), ir::numElements(output),
                             ir::shapeToString(input), ir::numElements(input))};
  }
  const std::vector<size_t> in = nonUnitDims(input);
  const std::vector<size_t> out = nonUnitDims(output);
  ShardingRuleBuilder builder(op.inputs, op.outputs);
  std::vector<DimFactors> inputDims(input.size());
  std::vector<DimFactors> outputDims(output.size());
  // Equal element counts make both walks end together.
  size_t i = 0;
  size_t o = 0;
  while (i < in.size() && o < out.size()) {
    std::vector<size_t> groupIn{in[i++]};
    std::vector<size_t> groupOut{out[o++]};
    int64_t inProduct = input[groupIn.back()];
    int64_t outProduct = output[groupOut.back()];
    while (inProduct != outProduct) {
      if (inProduct < outProduct) {
        groupIn.push_back(in[i++]);
        inProduct *= input[groupIn.back()];
      } else {
        groupOut.push_back(out[o++]);
        outProduct *= output[groupOut.back()];
      }
    }
    if (auto group = decomposeGroup(input, groupIn, output, groupOut)) {
      addGroup(builder, *group, input, inputDims, outputDims);
    }
  }
  builder.operandParts(0, std::move(inputDims)).resultParts(0, std::move(outputDims));
  return std::move(builder).build();
}

}  // namespace autopar::rules
