#include "planner/configuration/configuration_search.h"

#include <gtest/gtest.h>

namespace autopar::planner {
namespace {

SearchRequest smallRequest(OpSearch opSearch) {
  SearchRequest request;
  request.base.model = std::string(AUTOPAR_SOURCE_DIR) + "/examples/models/llama-2layer-h256.json";
  request.base.cluster = "cpu-host";
  request.base.gbs = 8;
  request.base.opSearch = opSearch;
  return request;
}

TEST(SearchConfigurations, RanksFittingConfigurationsFastestFirst) {
  auto found = searchConfigurations(smallRequest(OpSearch::kMegatron));
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_TRUE(found->best);
  ASSERT_FALSE(found->hybrid.ranked.empty());
  ASSERT_EQ(found->refined.size(), found->hybrid.ranked.size());
  for (size_t i = 1; i < found->hybrid.ranked.size(); ++i) {
    EXPECT_LE(found->hybrid.ranked[i - 1].second.stepSeconds,
              found->hybrid.ranked[i].second.stepSeconds);
  }
  EXPECT_TRUE(found->estimate->fits());
  EXPECT_EQ(found->best->worldSize(), found->cluster.numDevices);
  EXPECT_EQ(found->blockProbes, 0);
}

/// The op-level searches re-shard the configurations Megatron's refinement ranked, so each
/// winner is at most the megatron mode's.
TEST(SearchConfigurations, OpSearchWinnerNeverSlowerThanMegatrons) {
  auto megatron = searchConfigurations(smallRequest(OpSearch::kMegatron));
  ASSERT_TRUE(megatron && megatron->best);
  for (OpSearch search :
       {OpSearch::kShardingPropagation, OpSearch::kRecursiveProgramming, OpSearch::kIlp}) {
    auto found = searchConfigurations(smallRequest(search));
    ASSERT_TRUE(found && found->best) << opSearchName(search);
    EXPECT_LE(found->bestSeconds, megatron->bestSeconds) << opSearchName(search);
    EXPECT_EQ(found->opSearchEvaluated, static_cast<int>(found->hybrid.ranked.size()));
    EXPECT_GT(found->blockProbes, 0);
  }
}

TEST(SearchConfigurations, NothingFitsSaysHowManyNodesWould) {
  SearchRequest request;
  request.base.model = "gpt3-175b";
  request.base.cluster = "dgx-a100-40g";
  request.base.gbs = 64;
  auto found = searchConfigurations(request);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_FALSE(found->best);
  const std::string advice = nothingFitsAdvice(*found, 1);
  EXPECT_TRUE(advice.starts_with("nothing fits: the leanest configuration")) << advice;
  EXPECT_NE(advice.find("would fit it"), std::string::npos) << advice;
}

}  // namespace
}  // namespace autopar::planner

namespace autopar::planner {
namespace {

TEST(SampledDegrees, AreTheSearchsTensorParallelDegreesOnANodeAndItsMicroBatchSizes) {
  // Qwen-14B's 40 heads stop TP at 8 on a node of 16.
  auto qwen = sampledDegrees("qwen-14b", 16, 2);
  ASSERT_TRUE(qwen.ok()) << qwen.error().message;
  EXPECT_EQ(qwen->tensorParallel, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(qwen->microBatches, (std::vector<int64_t>{1, 2}));
  auto llama = sampledDegrees("llama2-70b", 8, 128);
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ(llama->tensorParallel, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(llama->microBatches, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_FALSE(sampledDegrees("no-such-model", 8, 8).ok());
}

}  // namespace
}  // namespace autopar::planner
