// Property test: for random pairs of layouts, the planned redistribution turns every device's
// source shard into exactly its target shard under the reference interpreter.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

#include "layout/common_refinement.h"
#include "layout/redistribution.h"
#include "layout/reference_interpreter_test_util.h"

namespace autopar::layout {
namespace {

constexpr uint64_t kSeed = 0x5eed002;
constexpr int kNumCases = 12000;
constexpr int64_t kDeviceCounts[] = {1, 2, 3, 4, 6, 8, 12, 16};
constexpr int64_t kMaxElementsBeforePadding = 64;

cluster::Cluster twoNodeCluster() {
  cluster::Cluster cluster;
  cluster.name = "two-node-test";
  cluster.numDevices = 16;
  cluster.devicesPerNode = 8;
  cluster.levels = {{"nvlink", 8, 300e9, 2e-6}, {"ib", 16, 25e9, 5e-6}};
  return cluster;
}

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/// A random ordered factorization of `count`, sometimes with a unit axis.
std::vector<int64_t> randomMatrixShape(int64_t count, std::mt19937_64& rng) {
  std::vector<int64_t> shape;
  for (int64_t rest = count; rest > 1;) {
    std::vector<int64_t> divisors;
    for (int64_t d = 2; d <= rest; ++d) {
      if (rest % d == 0) divisors.push_back(d);
    }
    const int64_t factor =
        divisors[static_cast<size_t>(uniform(rng, 0, int64_t(divisors.size()) - 1))];
    shape.push_back(factor);
    rest /= factor;
  }
  if (uniform(rng, 0, 7) == 0)
    shape.insert(shape.begin() + uniform(rng, 0, int64_t(shape.size())), 1);
  return shape;
}

std::vector<int> shuffledRanks(std::vector<int> ranks, std::mt19937_64& rng) {
  std::shuffle(ranks.begin(), ranks.end(), rng);
  return ranks;
}

/// Gives each axis, in random order, to a random dim (60%), to the partial sums (20%) or to
/// nobody (20%).
TensorLayout randomAxes(const DeviceMatrix& matrix, int rank, std::mt19937_64& rng) {
  TensorLayout layout = TensorLayout::replicated(matrix, ir::Shape(static_cast<size_t>(rank), 1));
  std::vector<int> axes(static_cast<size_t>(matrix.numAxes()));
  std::iota(axes.begin(), axes.end(), 0);
  std::shuffle(axes.begin(), axes.end(), rng);
  for (int axis : axes) {
    const int64_t roll = uniform(rng, 0, 9);
    if (roll < 6) {
      layout.dimAxes[static_cast<size_t>(uniform(rng, 0, rank - 1))].push_back(axis);
    } else if (roll < 8) {
      layout.partialAxes.push_back(axis);
    }
  }
  std::sort(layout.partialAxes.begin(), layout.partialAxes.end());
  return layout;
}

struct RandomCase {
  TensorLayout from;
  TensorLayout to;
  bool enableAllToAll = false;
};

RandomCase randomCase(std::mt19937_64& rng) {
  const int64_t numDevices = kDeviceCounts[uniform(rng, 0, std::size(kDeviceCounts) - 1)];
  std::vector<int> ranks(static_cast<size_t>(numDevices));
  std::iota(ranks.begin(), ranks.end(), 0);
  if (uniform(rng, 0, 5) == 0) ranks = shuffledRanks(ranks, rng);
  const DeviceMatrix source(randomMatrixShape(numDevices, rng), ranks);
  const int64_t targetKind = uniform(rng, 0, 9);  // 0-3 same matrix, 4-8 new shape, 9 new order
  const DeviceMatrix target =
      targetKind < 4 ? source
                     : DeviceMatrix(randomMatrixShape(numDevices, rng),
                                    targetKind == 9 ? shuffledRanks(ranks, rng) : ranks);

  const int rank = static_cast<int>(uniform(rng, 1, 4));
  RandomCase result{randomAxes(source, rank, rng), randomAxes(target, rank, rng),
                    uniform(rng, 0, 1) == 1};
  // Each dim divides by both layouts' cuts; small tensors get an extra factor now and then.
  int64_t elements = 1;
  for (int dim = 0; dim < rank; ++dim) {
    const int64_t size = std::lcm(result.from.cutsOfDim(dim), result.to.cutsOfDim(dim));
    result.from.shape[static_cast<size_t>(dim)] = size;
    elements *= size;
  }
  for (int dim = 0; dim < rank; ++dim) {
    if (elements <= kMaxElementsBeforePadding && uniform(rng, 0, 2) == 0) {
      result.from.shape[static_cast<size_t>(dim)] *= 2;
      elements *= 2;
    }
  }
  result.to.shape = result.from.shape;
  return result;
}

std::string describe(const RandomCase& c, const Redistribution& plan) {
  std::string text = c.from.toString() + " -> " + c.to.toString() +
                     (c.enableAllToAll ? " (all-to-all on)" : "") + "\n";
  for (const RedistStep& step : plan.steps) text += "  " + step.toString() + "\n";
  return text;
}

/// "" when the step prices are consistent, else what is wrong.
std::string checkCosts(const Redistribution& plan, bool enableAllToAll) {
  double seconds = 0;
  int64_t bytes = 0;
  for (const RedistStep& step : plan.steps) {
    const bool local =
        step.kind == PrimitiveKind::kSplit || step.kind == PrimitiveKind::kMakePartial;
    if (local && (step.seconds != 0 || step.bytesPerDevice != 0 || !step.algorithm.empty())) {
      return "local step has a cost: " + step.toString();
    }
    if (!local && (step.seconds <= 0 || step.bytesPerDevice <= 0 || step.algorithm.empty())) {
      return "collective step has no cost: " + step.toString();
    }
    if (step.kind == PrimitiveKind::kAllToAll && !enableAllToAll) return "all-to-all not enabled";
    if (step.matrix.axisSize(step.axis) == 1) return "step over one device: " + step.toString();
    seconds += step.seconds;
    bytes += step.bytesPerDevice;
  }
  if (bytes != plan.bytesPerDevice) return "bytesPerDevice is not the sum over steps";
  if (std::abs(seconds - plan.seconds) > 1e-12 * std::max(1.0, seconds)) {
    return "seconds is not the sum over steps";
  }
  return "";
}

/// "" when the interpreter takes `from`'s shards to `to`'s, else what differs.
std::string checkShards(const RandomCase& c, const Redistribution& plan, std::mt19937_64& rng) {
  for (const TensorLayout* layout : {&c.from, &c.to}) {
    for (int64_t index = 0; index < layout->deviceMatrix.numDevices(); ++index) {
      if (layout->sliceRanges(index) != testing::referenceRanges(*layout, index)) {
        return "sliceRanges differs from the reference at device " + std::to_string(index);
      }
    }
  }
  const testing::Shard full = testing::randomTensor(c.from.shape, rng);
  try {
    const auto result = testing::execute(testing::materialise(full, c.from, rng), plan.steps);
    const bool exactPartials =
        std::all_of(c.from.partialAxes.begin(), c.from.partialAxes.end(),
                    [&](int axis) { return c.from.deviceMatrix.axisSize(axis) == 1; });
    return testing::compareWithTarget(result, full, c.to, exactPartials);
  } catch (const std::exception& error) {
    return std::string("interpreter: ") + error.what();
  }
}

TEST(RedistributionProperty, RandomLayoutPairsReachExactlyTheTargetShards) {
  std::mt19937_64 rng(kSeed);
  const cluster::Cluster cluster = twoNodeCluster();
  std::map<PrimitiveKind, int> stepsOfKind;
  int fallbacks = 0;
  int failures = 0;
  for (int caseIndex = 0; caseIndex < kNumCases && failures < 5; ++caseIndex) {
    const RandomCase c = randomCase(rng);
    ASSERT_TRUE(c.from.validate().ok()) << c.from.toString();
    ASSERT_TRUE(c.to.validate().ok()) << c.to.toString();
    auto plan = redistribute(c.from, c.to, cluster, 4, {c.enableAllToAll});
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    if (!commonRefinement(c.from.deviceMatrix, c.to.deviceMatrix)) ++fallbacks;
    for (const RedistStep& step : plan->steps) ++stepsOfKind[step.kind];

    std::string problem = checkCosts(*plan, c.enableAllToAll);
    if (problem.empty()) problem = checkShards(c, *plan, rng);
    if (!problem.empty()) {
      ++failures;
      ADD_FAILURE() << "case " << caseIndex << ": " << problem << "\n" << describe(c, *plan);
    }
  }
  // The generator must reach every primitive and the fallback often.
  EXPECT_GT(fallbacks, 200);
  for (PrimitiveKind kind :
       {PrimitiveKind::kSplit, PrimitiveKind::kAllGather, PrimitiveKind::kAllToAll,
        PrimitiveKind::kReduceScatter, PrimitiveKind::kAllReduce, PrimitiveKind::kMakePartial}) {
    EXPECT_GT(stepsOfKind[kind], 200) << primitiveName(kind);
  }
}

TEST(RedistributionProperty, DroppingTheLastStepIsDetected) {
  std::mt19937_64 rng(kSeed + 2);
  const cluster::Cluster cluster = twoNodeCluster();
  int checked = 0;
  while (checked < 2000) {
    const RandomCase c = randomCase(rng);
    auto plan = redistribute(c.from, c.to, cluster, 4, {c.enableAllToAll});
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    if (plan->empty()) continue;
    plan->steps.pop_back();
    ASSERT_NE(checkShards(c, *plan, rng), "") << describe(c, *plan);
    ++checked;
  }
}

TEST(RedistributionProperty, EveryLayoutRedistributesToItselfWithNoSteps) {
  std::mt19937_64 rng(kSeed + 1);
  const cluster::Cluster cluster = twoNodeCluster();
  for (int caseIndex = 0; caseIndex < 2000; ++caseIndex) {
    const RandomCase c = randomCase(rng);
    auto plan = redistribute(c.from, c.from, cluster, 2, {c.enableAllToAll});
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_TRUE(plan->empty()) << describe(c, *plan);
  }
}

}  // namespace
}  // namespace autopar::layout
