// Seed 000's mem_coeff contract for the double-recursive search, on LLaMA2-7B over 8 devices:
// 0.01 gives pure data parallelism; raising mem_coeff by factors of 4 never raises per-device
// memory; a large enough value gives model parallelism.

#include <gtest/gtest.h>

#include <numeric>

#include "cost/graph_cost.h"
#include "frontend/model_presets.h"
#include "frontend/transformer.h"
#include "rules/graph_sharding.h"
#include "search/op_level/recursive.h"

namespace autopar {
namespace {

struct Searched {
  std::vector<rules::FactorCuts> cuts;
  int64_t peakMemoryBytes = 0;
};

class RecursiveMemCoeff : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = frontend::transformerPreset("llama2-7b");
    ASSERT_TRUE(config.ok());
    config->microBatch = 8;  // one sample per device
    auto graph = frontend::buildTransformer(*config);
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    graph_ = std::move(*graph);
    cluster_ = *cluster::clusterPreset("dgx-a100-80g");
    ranks_.resize(8);
    std::iota(ranks_.begin(), ranks_.end(), 0);
  }

  Searched search(double memCoeff) {
    search::RecursiveOptions options;
    options.memCoeff = memCoeff;
    auto result = search::recursiveProgramming(graph_, ranks_, cluster_, options);
    EXPECT_TRUE(result.ok()) << result.error().message;
    const std::vector<rules::StrategySource> sources(graph_.ops().size(),
                                                     rules::StrategySource::kSearch);
    auto sharding = rules::shardGraphWithCuts(graph_, ranks_, result->cuts, sources);
    EXPECT_TRUE(sharding.ok()) << sharding.error().message;
    auto report = cost::evaluateGraph(graph_, sharding->ops, cluster_);
    EXPECT_TRUE(report.ok()) << report.error().message;
    return Searched{result->cuts, report->memory.total()};
  }

  bool isDataParallel(const std::vector<rules::FactorCuts>& cuts) const {
    for (const ir::Op& op : graph_.ops()) {
      auto rule = rules::shardingRuleFor(graph_, op);
      if (cuts[op.id] != rules::defaultFactorCuts(*rule, 8)) return false;
    }
    return true;
  }

  ir::Graph graph_;
  cluster::Cluster cluster_;
  std::vector<int> ranks_;
};

TEST_F(RecursiveMemCoeff, LowValueGivesPureDataParallelism) {
  EXPECT_TRUE(isDataParallel(search(0.01).cuts));
}

TEST_F(RecursiveMemCoeff, RaisingByFactorsOfFourNeverRaisesMemoryAndReachesModelParallelism) {
  int64_t previous = std::numeric_limits<int64_t>::max();
  bool sawModelParallel = false;
  for (double memCoeff = 0.01; memCoeff < 700; memCoeff *= 4) {
    const Searched searched = search(memCoeff);
    EXPECT_LE(searched.peakMemoryBytes, previous) << "mem_coeff " << memCoeff;
    previous = searched.peakMemoryBytes;
    sawModelParallel = sawModelParallel || !isDataParallel(searched.cuts);
  }
  EXPECT_TRUE(sawModelParallel);
  // The model-parallel end fits one 80 GB device; pure data parallelism (121 GB of model states)
  // does not.
  EXPECT_LT(previous, cluster_.device.memoryBytes);
}

}  // namespace
}  // namespace autopar
