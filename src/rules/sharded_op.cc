#include "rules/sharded_op.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

namespace autopar::rules {
namespace {

int64_t cutProduct(const FactorCuts& cuts) {
  return std::accumulate(cuts.begin(), cuts.end(), int64_t{1}, std::multiplies<>());
}

std::string dimName(std::string_view tensors, size_t index, size_t dim) {
  return fmt::format("{}[{}] dim {}", tensors, index, dim);
}

// Where a dim sits in a rule, for messages: "inputs[0] dim 1".
struct DimRef {
  std::string_view tensors;  // "inputs" or "outputs"
  size_t index = 0;
  size_t dim = 0;

  [[nodiscard]] std::string name() const { return dimName(tensors, index, dim); }
};

// Calls fn(where the dim sits, its parts) for every dim of every input and output.
template <class Fn>
void forEachDim(const ShardingRule& rule, Fn&& fn) {
  for (size_t index = 0; index < rule.operands.size(); ++index) {
    for (size_t dim = 0; dim < rule.operands[index].size(); ++dim) {
      fn(DimRef{"inputs", index, dim}, rule.operands[index][dim]);
    }
  }
  for (size_t index = 0; index < rule.results.size(); ++index) {
    for (size_t dim = 0; dim < rule.results[index].size(); ++dim) {
      fn(DimRef{"outputs", index, dim}, rule.results[index][dim]);
    }
  }
}

// Checks one dim's parts under `cuts`: every cut divides its part, and a minor factor is cut only
// when every factor before it in the dim is cut whole. Otherwise a device's share of the dim
// would not be one contiguous block: [a*b] with a cut by 2 and b by 2 would hold a-rows 0..a/2
// and in each of them b-columns 0..b/2, a strided set.
Status checkDim(const ShardingRule& rule, const FactorCuts& cuts, const DimRef& where,
                const DimFactors& parts) {
  const FactorPart* partlyCut = nullptr;
  for (const FactorPart& part : parts) {
    const Factor& factor = rule.factors[part.factor];
    const int64_t cut = cuts[part.factor];
    if (part.size % cut != 0) {
      return Error{fmt::format("{}: factor {} of size {} does not divide into {}", where.name(),
                               factor.name, part.size, cut)};
    }
    if (cut > 1 && partlyCut != nullptr) {
      return Error{
          fmt::format("{} cuts factor {} by {} but the major factor {} of size {} is cut "
                      "only by {}; a device's share would not be contiguous",
                      where.name(), factor.name, cut, rule.factors[partlyCut->factor].name,
                      partlyCut->size, cuts[partlyCut->factor])};
    }
    if (cut != part.size && partlyCut == nullptr) partlyCut = &part;
  }
  return {};
}

// Checks cuts against a rule: one positive cut per factor, kNeedReplication factors whole, and
// every dim as in checkDim.
Status checkCuts(const ShardingRule& rule, const FactorCuts& cuts) {
  if (cuts.size() != rule.factors.size()) {
    return Error{
        fmt::format("cuts give {} factors but the rule has {}", cuts.size(), rule.factors.size())};
  }
  for (size_t f = 0; f < cuts.size(); ++f) {
    const Factor& factor = rule.factors[f];
    if (cuts[f] < 1) {
      return Error{
          fmt::format("factor {} has cut {}, expected a positive count", factor.name, cuts[f])};
    }
    if (cuts[f] > 1 && factor.kind == FactorKind::kNeedReplication) {
      return Error{
          fmt::format("factor {} is cut by {} but needs replication", factor.name, cuts[f])};
    }
  }
  Status status;
  forEachDim(rule, [&](const DimRef& where, const DimFactors& parts) {
    if (status) status = checkDim(rule, cuts, where, parts);
  });
  return status;
}

// The cut a part of `size` takes from the `remaining` cut of its dim, major parts first: all of
// it when it divides the part, the whole part when the part divides it, else none fits.
std::optional<int64_t> takeCut(int64_t remaining, int64_t size) {
  if (size % remaining == 0) return remaining;
  if (remaining % size == 0) return size;
  return std::nullopt;
}

std::string partsToString(const ShardingRule& rule, const DimFactors& parts) {
  std::vector<std::string> names;
  for (const FactorPart& part : parts) {
    names.push_back(fmt::format("{} of size {}", rule.factors[part.factor].name, part.size));
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

// Where a factor's cut was first read from the strategy, for conflict messages.
struct CutOrigin {
  std::string where;
  int64_t cut = 1;
};

// Reads the cut of input `index` dim `dim` into the cuts of the factors of that dim.
Status readDimCut(const ShardingRule& rule, size_t index, size_t dim, int64_t cut, FactorCuts& cuts,
                  std::vector<std::optional<CutOrigin>>& origins) {
  const std::string where = dimName("inputs", index, dim);
  const int64_t size = rule.operandShapes[index][dim];
  if (cut < 1) return Error{fmt::format("{} has cut {}, expected a positive count", where, cut)};
  if (size % cut != 0) {
    return Error{fmt::format("{} of size {} does not divide into {}", where, size, cut)};
  }
  const DimFactors& parts = rule.operands[index][dim];
  if (parts.empty() && cut > 1) {
    return Error{
        fmt::format("{} maps to no factor of the op and cannot be cut (cut {})", where, cut)};
  }
  int64_t remaining = cut;
  for (const FactorPart& part : parts) {
    const auto take = takeCut(remaining, part.size);
    if (!take) {
      return Error{fmt::format("{} cut {} does not split along its factors ({})", where, cut,
                               partsToString(rule, parts))};
    }
    const Factor& factor = rule.factors[part.factor];
    if (*take > 1 && factor.kind == FactorKind::kNeedReplication) {
      return Error{fmt::format("{} cuts factor {} by {}, but {} needs replication", where,
                               factor.name, *take, factor.name)};
    }
    auto& origin = origins[part.factor];
    if (origin && origin->cut != *take) {
      return Error{fmt::format("{} cuts factor {} by {} but {} cuts it by {}", origin->where,
                               factor.name, origin->cut, where, *take)};
    }
    if (!origin) origin = CutOrigin{where, *take};
    cuts[part.factor] = *take;
    remaining /= *take;
  }
  return {};
}

// Greatest common divisor of the sizes of every part of every factor; a factor's cut must divide
// it. 1 for a factor that maps to no dim, which therefore is never cut.
std::vector<int64_t> factorSizeGcds(const ShardingRule& rule) {
  std::vector<int64_t> gcds(rule.factors.size(), 0);
  forEachDim(rule, [&](const DimRef&, const DimFactors& parts) {
    for (const FactorPart& part : parts) gcds[part.factor] = std::gcd(gcds[part.factor], part.size);
  });
  for (int64_t& gcd : gcds) gcd = std::max<int64_t>(gcd, 1);
  return gcds;
}

// Depth-first over factors in order, each factor's candidate cuts ascending: lexicographic order.
void enumerateFrom(const ShardingRule& rule, const std::vector<int64_t>& gcds, size_t factor,
                   int64_t budget, FactorCuts& current, std::vector<FactorCuts>& all) {
  if (factor == rule.factors.size()) {
    if (checkCuts(rule, current)) all.push_back(current);
    return;
  }
  const bool canCut = rule.factors[factor].kind != FactorKind::kNeedReplication;
  for (int64_t cut = 1; cut <= budget; ++cut) {
    if (budget % cut != 0 || gcds[factor] % cut != 0) continue;
    if (cut > 1 && !canCut) break;
    current[factor] = cut;
    enumerateFrom(rule, gcds, factor + 1, budget / cut, current, all);
  }
  current[factor] = 1;
}

// Dims as device-matrix axes: each part's factor axis when that factor is cut.
std::vector<std::vector<int>> dimAxesOf(const std::vector<DimFactors>& dims,
                                        const std::vector<int>& factorAxis) {
  std::vector<std::vector<int>> dimAxes(dims.size());
  for (size_t dim = 0; dim < dims.size(); ++dim) {
    for (const FactorPart& part : dims[dim]) {
      if (factorAxis[part.factor] >= 0) dimAxes[dim].push_back(factorAxis[part.factor]);
    }
  }
  return dimAxes;
}

// Axes of the cut factors that appear in no dim of `dims`, in axis order.
std::vector<int> axesOfAbsentFactors(const std::vector<DimFactors>& dims,
                                     const std::vector<int>& factorAxis) {
  std::vector<bool> present(factorAxis.size(), false);
  for (const DimFactors& parts : dims) {
    for (const FactorPart& part : parts) present[part.factor] = true;
  }
  std::vector<int> axes;
  for (size_t f = 0; f < factorAxis.size(); ++f) {
    if (!present[f] && factorAxis[f] >= 0) axes.push_back(factorAxis[f]);
  }
  return axes;
}

Status checkDeviceCount(int64_t usedDevices, int64_t numDevices) {
  if (numDevices < 1) return Error{"the op runs on no devices"};
  if (usedDevices > numDevices) {
    return Error{
        fmt::format("strategy uses {} devices but the op runs on {}", usedDevices, numDevices)};
  }
  if (numDevices % usedDevices != 0) {
    return Error{
        fmt::format("strategy uses {} devices, which does not divide the {} the op runs on",
                    usedDevices, numDevices)};
  }
  return {};
}

}  // namespace

Expected<FactorCuts> factorCutsFromStrategy(const ShardingRule& rule,
                                            const layout::Strategy& strategy) {
  if (strategy.size() != rule.operands.size()) {
    return Error{fmt::format("the strategy gives cuts for {} input{} but the op has {}",
                             strategy.size(), strategy.size() == 1 ? "" : "s",
                             rule.operands.size())};
  }
  FactorCuts cuts(rule.factors.size(), 1);
  std::vector<std::optional<CutOrigin>> origins(rule.factors.size());
  for (size_t index = 0; index < strategy.size(); ++index) {
    if (strategy[index].size() != rule.operands[index].size()) {
      return Error{fmt::format("inputs[{}] has {} dims but the strategy gives {}", index,
                               rule.operands[index].size(), strategy[index].size())};
    }
    for (size_t dim = 0; dim < strategy[index].size(); ++dim) {
      auto status = readDimCut(rule, index, dim, strategy[index][dim], cuts, origins);
      if (!status) return status.error();
    }
  }
  if (auto status = checkCuts(rule, cuts); !status) return status.error();
  return cuts;
}

layout::Strategy strategyFromFactorCuts(const ShardingRule& rule, const FactorCuts& cuts) {
  layout::Strategy strategy;
  for (const auto& dims : rule.operands) {
    std::vector<int64_t> inputCuts;
    for (const DimFactors& parts : dims) {
      int64_t cut = 1;
      for (const FactorPart& part : parts) cut *= cuts.at(part.factor);
      inputCuts.push_back(cut);
    }
    strategy.push_back(std::move(inputCuts));
  }
  return strategy;
}

std::vector<FactorCuts> enumerateFactorCuts(const ShardingRule& rule, int64_t numDevices) {
  std::vector<FactorCuts> all;
  if (numDevices < 1) return all;
  FactorCuts current(rule.factors.size(), 1);
  enumerateFrom(rule, factorSizeGcds(rule), 0, numDevices, current, all);
  return all;
}

FactorCuts defaultFactorCuts(const ShardingRule& rule, int64_t numDevices) {
  FactorCuts cuts(rule.factors.size(), 1);
  const std::vector<int64_t> gcds = factorSizeGcds(rule);
  for (size_t f = 0; f < rule.factors.size(); ++f) {
    const Factor& factor = rule.factors[f];
    if (!factor.isBatch || factor.kind == FactorKind::kNeedReplication) continue;
    for (int64_t cut = numDevices; cut > 1; --cut) {
      if (numDevices % cut != 0 || gcds[f] % cut != 0) continue;
      cuts[f] = cut;
      if (checkCuts(rule, cuts)) return cuts;
    }
    cuts[f] = 1;
    return cuts;
  }
  return cuts;
}

Expected<ShardedOp> applyFactorCuts(const ShardingRule& rule, const FactorCuts& cuts,
                                    const std::vector<int>& ranks) {
  if (auto status = checkCuts(rule, cuts); !status) return status.error();
  const int64_t usedDevices = cutProduct(cuts);
  const auto numDevices = static_cast<int64_t>(ranks.size());
  if (auto status = checkDeviceCount(usedDevices, numDevices); !status) return status.error();

  ShardedOp op;
  op.cuts = cuts;
  op.factorAxis.assign(cuts.size(), -1);
  std::vector<int64_t> matrixShape;
  std::vector<int> reductionAxes;
  for (size_t f = 0; f < cuts.size(); ++f) {
    if (cuts[f] == 1) continue;
    op.factorAxis[f] = static_cast<int>(matrixShape.size());
    if (rule.factors[f].kind == FactorKind::kReduction) reductionAxes.push_back(op.factorAxis[f]);
    matrixShape.push_back(cuts[f]);
  }
  if (numDevices > usedDevices) {
    op.replicaAxis = static_cast<int>(matrixShape.size());
    matrixShape.push_back(numDevices / usedDevices);
  }
  op.matrix = layout::DeviceMatrix(std::move(matrixShape), ranks);
  for (size_t index = 0; index < rule.operands.size(); ++index) {
    op.inputs.push_back(layout::TensorLayout{
        op.matrix, dimAxesOf(rule.operands[index], op.factorAxis), {}, rule.operandShapes[index]});
    op.inputGradPartialAxes.push_back(axesOfAbsentFactors(rule.operands[index], op.factorAxis));
  }
  for (size_t index = 0; index < rule.results.size(); ++index) {
    op.outputs.push_back(layout::TensorLayout{op.matrix,
                                              dimAxesOf(rule.results[index], op.factorAxis),
                                              reductionAxes, rule.resultShapes[index]});
  }
  op.computeFraction = 1.0 / static_cast<double>(usedDevices);
  op.gemm = localGemm(rule, cuts);
  for (const auto& internal : rule.internal) {
    const int axis = op.factorAxis[internal.factor];
    if (axis < 0) continue;
    int64_t divisor = 1;
    for (int factor : internal.shardedBy) divisor *= cuts[factor];
    op.internalReduces.push_back(
        {axis, (internal.forwardElements + internal.backwardElements) / divisor});
  }
  return op;
}

std::optional<LocalGemm> localGemm(const ShardingRule& rule, const FactorCuts& cuts) {
  if (rule.operands.size() != 2) return std::nullopt;
  // Called for every op of every costed strategy: a scan per factor, no allocation.
  auto find = [&](size_t index, int factor) -> const FactorPart* {
    for (const DimFactors& dim : rule.operands[index]) {
      for (const FactorPart& part : dim) {
        if (part.factor == factor) return &part;
      }
    }
    return nullptr;
  };
  LocalGemm gemm;
  bool reduces = false;
  for (size_t f = 0; f < rule.factors.size(); ++f) {
    const FactorPart* first = find(0, static_cast<int>(f));
    const FactorPart* second = find(1, static_cast<int>(f));
    const FactorPart* part = first != nullptr ? first : second;
    if (part == nullptr) continue;
    const double local = static_cast<double>(part->size) / static_cast<double>(cuts[f]);
    if (rule.factors[f].kind == FactorKind::kReduction) {
      gemm.depth *= local;
      reduces = true;
    } else if (first != nullptr) {
      gemm.rows *= local;
    } else {
      gemm.columns *= local;
    }
  }
  if (!reduces) return std::nullopt;
  return gemm;
}

std::vector<FactorCuts> fullDeviceCuts(const ShardingRule& rule, int64_t numDevices) {
  auto all = enumerateFactorCuts(rule, numDevices);
  std::vector<FactorCuts> full;
  for (const auto& cuts : all) {
    int64_t product = 1;
    for (int64_t cut : cuts) product *= cut;
    if (product == numDevices) full.push_back(cuts);
  }
  return full.empty() ? all : full;
}

}  // namespace autopar::rules
