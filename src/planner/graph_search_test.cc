#include "planner/graph_search.h"

#include <gtest/gtest.h>

#include <set>

namespace autopar::planner {
namespace {

std::string example(const std::string& name) {
  return std::string(AUTOPAR_SOURCE_DIR) + "/examples/graphs/" + name;
}

TEST(SearchGraph, PipelinesTaggedBlocksAndRanksFastestFirst) {
  GraphSearchRequest request;
  request.model = example("vit_encoder.json");
  request.globalBatch = 512;
  auto found = searchGraph(request);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->blocks, 16);
  EXPECT_EQ(found->batch, 64);
  EXPECT_EQ(found->microBatches, 8);
  ASSERT_TRUE(found->best);
  ASSERT_FALSE(found->ranked.empty());
  for (size_t i = 1; i < found->ranked.size(); ++i) {
    EXPECT_LE(found->ranked[i - 1].stepSeconds, found->ranked[i].stepSeconds);
  }
  // Every divisor of the 8 devices up to the 8 micro-batches is a stage count tried.
  std::set<int> stages;
  for (const auto& ranked : found->ranked) stages.insert(ranked.candidate.stages);
  EXPECT_EQ(stages, (std::set<int>{1, 2, 4, 8}));
  EXPECT_DOUBLE_EQ(found->best->estimate.stepSeconds, found->ranked.front().stepSeconds);
  EXPECT_EQ(found->best->pipeline.stages, found->ranked.front().candidate.stages);
}

TEST(SearchGraph, AGraphWithoutBlockTagsIsOneBlock) {
  GraphSearchRequest request;
  request.model = example("mlp.json");
  request.globalBatch = 64;
  auto found = searchGraph(request);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->blocks, 0);
  ASSERT_EQ(found->ranked.size(), 1u);
  EXPECT_EQ(found->ranked.front().candidate.stages, 1);
  EXPECT_EQ(found->ranked.front().candidate.recompute, ir::Recompute::kNone);
}

/// Seed 001's large embedding table: the ILP shards it, data parallelism alone cannot.
TEST(SearchGraph, TheIlpBeatsDataParallelismOnALargeTable) {
  GraphSearchRequest request;
  request.model = example("recsys.json");
  request.globalBatch = 16384;
  auto dataParallel = searchGraph(request);
  request.opSearch = OpSearch::kIlp;
  auto ilp = searchGraph(request);
  ASSERT_TRUE(dataParallel && ilp);
  ASSERT_TRUE(dataParallel->best && ilp->best);
  EXPECT_LT(ilp->ranked.front().stepSeconds, dataParallel->ranked.front().stepSeconds);
}

TEST(SearchGraph, TheGlobalBatchMustBeWholeMicroBatches) {
  GraphSearchRequest request;
  request.model = example("mlp.json");
  request.globalBatch = 50;
  auto found = searchGraph(request);
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().message,
            "--gbs 50: expected a multiple of the graph's batch 32 (its first input's dim 0: one "
            "micro-batch), at most 4096 micro-batches");
}

}  // namespace
}  // namespace autopar::planner
