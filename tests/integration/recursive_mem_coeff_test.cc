// Seed 000's mem_coeff contract for the double-recursive search, on LLaMA2-7B over 8 devices,
// through the planner's pipeline (planner::evaluateModel):
// 0.01 gives pure data parallelism; raising mem_coeff by factors of 4 never raises per-device
// memory; a large enough value gives model parallelism.

#include <gtest/gtest.h>

#include "frontend/model_presets.h"
#include "frontend/transformer.h"
#include "planner/plan_evaluation.h"

namespace autopar {
namespace {

struct Searched {
  std::vector<layout::Strategy> strategies;
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
    model_ = planner::LoadedModel{std::move(*graph), "llama2-7b", 1, config->seq};
    cluster_ = *cluster::clusterPreset("dgx-a100-80g");
    dataParallel_ = plan("data_parallel", 0).strategies;
  }

  /// The planner's whole pipeline: search, shard, cost and simulate one step.
  Searched plan(const std::string& search, double memCoeff) {
    planner::PlanOptions options;
    options.search = search;
    options.memCoeff = memCoeff;
    auto evaluated = planner::evaluateModel(model_, options, cluster_);
    EXPECT_TRUE(evaluated.ok()) << evaluated.error().message;
    if (!evaluated) return {};
    return Searched{evaluated->outcome.sharding.strategies, evaluated->peakBytes()};
  }

  Searched search(double memCoeff) { return plan("recursive_programming", memCoeff); }

  bool isDataParallel(const std::vector<layout::Strategy>& strategies) const {
    return strategies == dataParallel_;
  }

  planner::LoadedModel model_;
  cluster::Cluster cluster_;
  std::vector<layout::Strategy> dataParallel_;
};

TEST_F(RecursiveMemCoeff, LowValueGivesPureDataParallelism) {
  EXPECT_TRUE(isDataParallel(search(0.01).strategies));
}

TEST_F(RecursiveMemCoeff, RaisingByFactorsOfFourNeverRaisesMemoryAndReachesModelParallelism) {
  int64_t previous = std::numeric_limits<int64_t>::max();
  bool sawModelParallel = false;
  for (double memCoeff = 0.01; memCoeff < 700; memCoeff *= 4) {
    const Searched searched = search(memCoeff);
    EXPECT_LE(searched.peakMemoryBytes, previous) << "mem_coeff " << memCoeff;
    previous = searched.peakMemoryBytes;
    sawModelParallel = sawModelParallel || !isDataParallel(searched.strategies);
  }
  EXPECT_TRUE(sawModelParallel);
  // The model-parallel end fits one 80 GB device; pure data parallelism (121 GB of model states)
  // does not.
  EXPECT_LT(previous, cluster_.device.memoryBytes);
}

}  // namespace
}  // namespace autopar
