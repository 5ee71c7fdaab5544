#include "export/megatron_args.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

namespace autopar::exporters {
namespace {

/// An embedding, then decoder layers of two ops each: `perStage[s]` of them on stage s.
plan::Plan stagedPlan(const std::vector<int>& perStage) {
  plan::Plan plan;
  plan.pipeline.stages = static_cast<int>(perStage.size());
  plan::OpRecord embedding;
  embedding.name = "embedding";
  embedding.block = "embedding";
  plan.ops.push_back(embedding);
  int layer = 0;
  for (size_t stage = 0; stage < perStage.size(); ++stage) {
    for (int i = 0; i < perStage[stage]; ++i, ++layer) {
      for (const char* op : {"qkv", "mlp"}) {
        plan::OpRecord record;
        record.name = fmt::format("llm.layer.{}.{}", layer, op);
        record.block = fmt::format("llm.layer.{}", layer);
        record.stage = static_cast<int>(stage);
        plan.ops.push_back(record);
      }
    }
  }
  return plan;
}

TEST(MegatronArgs, VirtualStageLayersCountEachStagesDecoderLayers) {
  EXPECT_EQ(virtualStageLayers(stagedPlan({3, 5, 5, 3})), (std::vector<int64_t>{3, 5, 5, 3}));
  EXPECT_EQ(virtualStageLayers(stagedPlan({4})), (std::vector<int64_t>{4}));
}

TEST(MegatronArgs, APlanWritesItsSetupAndItsLayerSplit) {
  plan::Plan plan = stagedPlan({3, 5, 5, 3});
  plan.setup.emplace();
  plan.setup->tp = 2;
  plan.setup->pp = 4;
  plan.setup->gbs = 64;
  auto arguments = megatronArguments(plan);
  ASSERT_TRUE(arguments) << arguments.error().message;
  EXPECT_NE(arguments->find("--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
                            "--micro-batch-size 1 --global-batch-size 64"),
            std::string::npos)
      << *arguments;
  EXPECT_NE(arguments->find("--decoder-first-pipeline-num-layers 3 "
                            "--decoder-last-pipeline-num-layers 3"),
            std::string::npos)
      << *arguments;
}

/// Under bf16 DeepSpeed's BF16_Optimizer is its own ZeRO 1 and takes a stage 0 config (the
/// pipeline engine refuses bf16 with stage 1); fp16 keeps the stage it was given.
TEST(MegatronArgs, DeepSpeedUnderBf16WritesStageZero) {
  ir::TrainingSetup setup;
  setup.framework = ir::Framework::kMegatronDeepSpeed;
  setup.codePath.bf16Optimizer = true;
  setup.tp = 4;
  setup.pp = 12;
  setup.dp = 8;
  setup.zero = 1;
  setup.gbs = 2048;
  EXPECT_EQ(deepSpeedZeroStage(setup), 0);
  EXPECT_NE(megatronArguments(setup, {}).find("--deepspeed --zero-stage 0"), std::string::npos);
  setup.precision = "fp16";
  EXPECT_EQ(deepSpeedZeroStage(setup), 1);
  EXPECT_NE(megatronArguments(setup, {}).find("--deepspeed --zero-stage 1"), std::string::npos);
}

TEST(MegatronArgs, APlanWithoutASetupIsRefused) {
  auto arguments = megatronArguments(stagedPlan({2}));
  ASSERT_FALSE(arguments);
  EXPECT_NE(arguments.error().message.find("no training setup"), std::string::npos);
}

}  // namespace
TEST(MegatronArgs, ArgumentLinesPutEachFlagOnALineThatStillPastesIntoAShell) {
  EXPECT_EQ(argumentLines("--tensor-model-parallel-size 4 --sequence-parallel --split '100,0,0'"),
            "--tensor-model-parallel-size 4 \\\n  --sequence-parallel \\\n  --split '100,0,0'");
  EXPECT_EQ(argumentLines("--sequence-parallel"), "--sequence-parallel");
  EXPECT_EQ(argumentLines(""), "");
}

}  // namespace autopar::exporters
