// Seed 000's mem_coeff contract for the double-recursive search, on LLaMA2-7B over 8 devices,
// through the planner's pipeline (planner::evaluateModel):
// 0.01 gives pure data parallelism; raising mem_coeff by factors of 4 never raises per-device
// memory; a large enough value gives model parallelism.
// And its plans stay coherent: on Qwen-14B over 8 Ascend devices, at every mem_coeff of seed 000's
// range, the plan moves at most twice the bytes Megatron's TP 8 moves for the same batch.

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
    model_ = planner::LoadedModel{.graph = std::move(*graph),
                                  .source = "llama2-7b",
                                  .microBatch = 1,
                                  .sequence = config->seq};
    cluster_ = *cluster::clusterPreset("dgx-a100-80g");
    dataParallel_ = plan("data_parallel", 0).strategies;
  }

  /// The planner's whole pipeline: search, shard, cost and simulate one step.
  Searched plan(const std::string& search, double memCoeff) {
    planner::PlanOptions options;
    options.search = *search::parseSearchMode(search);
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

/// Redistribution bytes per device over one step: activations, their gradients and gradient syncs.
int64_t movedBytes(const planner::Evaluated& evaluated) {
  int64_t bytes = 0;
  for (const auto& edge : evaluated.report.redistributions) {
    bytes += edge.redistribution.bytesPerDevice;
  }
  return bytes;
}

TEST(RecursiveProgrammingBytes, Qwen14bMovesAtMostTwiceMegatronTp8OnEightAscendDevices) {
  auto config = frontend::transformerPreset("qwen-14b");
  ASSERT_TRUE(config.ok());
  config->microBatch = 8;
  const cluster::Cluster ascend = *cluster::clusterPreset("ascend-910b-node");
  auto evaluate = [&](const frontend::TransformerConfig& built, const std::string& search,
                      double memCoeff) -> int64_t {
    auto graph = frontend::buildTransformer(built);
    EXPECT_TRUE(graph.ok()) << graph.error().message;
    if (!graph) return 0;
    planner::PlanOptions options;
    options.search = *search::parseSearchMode(search);
    options.memCoeff = memCoeff;
    auto evaluated = planner::evaluateModel(planner::LoadedModel{.graph = std::move(*graph),
                                                                 .source = "qwen-14b",
                                                                 .microBatch = 1,
                                                                 .sequence = built.seq},
                                            options, ascend);
    EXPECT_TRUE(evaluated.ok()) << evaluated.error().message;
    return evaluated ? movedBytes(*evaluated) : 0;
  };
  frontend::TransformerConfig megatron = *config;
  megatron.parallel = ir::ParallelConfig{.tp = 8, .dp = 1};
  const int64_t tp8 = evaluate(megatron, "semi_auto", 0.1);
  ASSERT_GT(tp8, 0);
  for (double memCoeff : {0.1, 1.0, 4.5, 16.0}) {
    const int64_t searched = evaluate(*config, "recursive_programming", memCoeff);
    EXPECT_GT(searched, 0) << "mem_coeff " << memCoeff;
    EXPECT_LE(searched, 2 * tp8) << "mem_coeff " << memCoeff << ": " << searched / (1 << 20)
                                 << " MiB against TP 8's " << tp8 / (1 << 20) << " MiB";
    // From 4.5 the search takes TP 8's cuts, and propagation keeps the residual stream in a
    // layout its norms can keep: TP 8's bytes, within 1% (the embedding's and head's layouts).
    if (memCoeff >= 4.5) {
      EXPECT_LE(static_cast<double>(searched), 1.01 * static_cast<double>(tp8))
          << "mem_coeff " << memCoeff;
    }
  }
}

}  // namespace
}  // namespace autopar
