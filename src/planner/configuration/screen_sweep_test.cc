/// One step model: the search's closed-form screen (search/layer_level/analytic_step.h on block
/// profiles, planner/configuration/block_profile.h) is derived from the same cost model, gradient
/// bucketing and schedule model as the full model (planner/configuration/configuration_estimate.h,
/// sim/). This sweep pins the two together across schedules, ZeRO stages, recompute, micro-batch
/// sizes, overlapped gradient reduction, context and expert parallelism
/// (bench/screen_vs_simulator.py prints the same comparison).

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include "planner/configuration/block_profile.h"
#include "planner/configuration/configuration_estimate.h"
#include "planner/inputs.h"

namespace autopar::planner {
namespace {

/// The screen's step may differ from the full model's by at most this fraction.
constexpr double kTolerance = 0.02;

struct Shape {
  int64_t tp, pp, dp, cp, ep;
};

/// A sweep's configuration of `shape`: sequence 4096, 8 samples per replica, sequence parallel
/// with TP.
MegatronConfig sweepConfig(std::string model, const Shape& shape, ir::Recompute recompute,
                           int zero) {
  MegatronConfig config;
  config.model = std::move(model);
  config.seq = 4096;
  config.tp = shape.tp;
  config.pp = shape.pp;
  config.dp = shape.dp;
  config.cp = shape.cp;
  config.ep = shape.ep;
  config.gbs = shape.dp * 8;
  config.recompute = recompute;
  config.zero = zero;
  config.sequenceParallel = shape.tp > 1;
  return config;
}

std::vector<MegatronConfig> denseSweep() {
  std::vector<MegatronConfig> configs;
  const Shape shapes[] = {{2, 2, 2, 1, 1}, {1, 4, 2, 1, 1}, {2, 4, 1, 1, 1},
                          {2, 1, 2, 2, 1}, {1, 2, 2, 2, 1}, {4, 2, 1, 1, 1}};
  for (const Shape& shape : shapes) {
    for (ir::Schedule schedule :
         {ir::Schedule::k1F1B, ir::Schedule::kInterleaved, ir::Schedule::kZeroBubbleH1}) {
      if (shape.pp == 1 && schedule != ir::Schedule::k1F1B) continue;
      for (ir::Recompute recompute :
           {ir::Recompute::kNone, ir::Recompute::kSelective, ir::Recompute::kFull}) {
        for (int zero = 0; zero <= 3; ++zero) {
          // Neither Megatron-LM nor DeepSpeed pipelines ZeRO 2 and 3; ZeRO needs replicas.
          if ((shape.pp > 1 && zero >= 2) || (shape.dp == 1 && zero > 0)) continue;
          for (int64_t mbs : {1, 2}) {
            for (bool overlap : {false, true}) {
              if (overlap && zero >= 2) continue;
              MegatronConfig config = sweepConfig("llama2-7b", shape, recompute, zero);
              config.mbs = mbs;
              config.gbs = shape.dp * mbs * 8;
              config.vpp = schedule == ir::Schedule::kInterleaved ? 2 : 1;
              config.schedule = schedule;
              config.codePath.overlapGradReduce = overlap;
              configs.push_back(config);
            }
          }
        }
      }
    }
  }
  return configs;
}

std::vector<MegatronConfig> expertSweep() {
  std::vector<MegatronConfig> configs;
  const Shape shapes[] = {{2, 2, 2, 1, 2}, {1, 2, 4, 1, 4}, {2, 1, 4, 1, 2}, {1, 1, 8, 1, 8}};
  for (const Shape& shape : shapes) {
    for (ir::Recompute recompute : {ir::Recompute::kNone, ir::Recompute::kFull}) {
      for (int zero : {0, 1}) {
        MegatronConfig config = sweepConfig(
            std::string(AUTOPAR_SOURCE_DIR) + "/examples/models/mixtral-8x7b-config.json", shape,
            recompute, zero);
        config.nodes = 1;
        configs.push_back(config);
      }
    }
  }
  return configs;
}

/// The screen's step against the full model's for each configuration, layers split evenly (as
/// the full model splits them by default).
void expectScreenMatches(const std::vector<MegatronConfig>& configs) {
  ASSERT_FALSE(configs.empty());
  auto transformer = transformerConfigOf(configs.front().model);
  ASSERT_TRUE(transformer) << transformer.error().message;
  BlockProfiler profiler(configs.front(), *transformer);
  for (MegatronConfig config : configs) {
    config.transformer = *transformer;
    auto full = estimateConfig(config);
    ASSERT_TRUE(full) << full.error().message;
    auto screen = closedFormEstimate(config, profiler, full->cluster,
                                     search::evenLayers(profiler.stacks(), config.pp, config.vpp));
    ASSERT_TRUE(screen) << screen.error().message;
    const double error = screen->stepSeconds / full->stepSeconds - 1;
    EXPECT_LE(std::abs(error), kTolerance)
        << config.model << " TP " << config.tp << " PP " << config.pp << " DP " << config.dp
        << " CP " << config.cp << " EP " << config.ep << " VPP " << config.vpp << " "
        << ir::scheduleName(config.schedule) << " MBS " << config.mbs << " recompute "
        << ir::recomputeName(config.recompute) << " ZeRO " << config.zero << " overlap "
        << config.codePath.overlapGradReduce << ": screen " << screen->stepSeconds << " s, full "
        << full->stepSeconds << " s";
  }
}

TEST(ScreenSweep, DenseConfigurationsWithinTwoPercentOfTheFullModel) {
  const std::vector<MegatronConfig> configs = denseSweep();
  EXPECT_GE(configs.size(), 300u);
  expectScreenMatches(configs);
}

TEST(ScreenSweep, ExpertParallelConfigurationsWithinTwoPercentOfTheFullModel) {
  const std::vector<MegatronConfig> configs = expertSweep();
  EXPECT_EQ(configs.size(), 16u);
  expectScreenMatches(configs);
}

/// torchtitan pipelines FSDP as ZeRO 1 (cost::CodePath::fsdpUnshardedUnderPipeline) and keeps every
/// micro-batch's stage output: the screen runs the configuration as the full model does.
TEST(ScreenSweep, TorchtitanPipelinedFsdpWithinTwoPercentOfTheFullModel) {
  std::vector<MegatronConfig> configs;
  for (const Shape& shape : {Shape{1, 2, 4, 1, 1}, Shape{2, 4, 1, 1, 1}}) {
    for (ir::Recompute recompute : {ir::Recompute::kNone, ir::Recompute::kFull}) {
      MegatronConfig config = sweepConfig("llama2-7b", shape, recompute, shape.dp > 1 ? 3 : 0);
      config.framework = cost::Framework::kTorchtitan;
      config.codePath = cost::frameworkProfile(cost::Framework::kTorchtitan).codePath;
      configs.push_back(config);
    }
  }
  expectScreenMatches(configs);
}

/// DeepSpeed's pipeline engine all-reduces ZeRO 1's gradients, and under bf16 its BF16_Optimizer
/// keeps bf16 gradients beside fp32 ones and reduces the bf16 copy: the screen prices both as the
/// full model does.
TEST(ScreenSweep, DeepSpeedGradientPathsWithinTwoPercentOfTheFullModel) {
  for (const char* precision : {"bf16", "fp16"}) {
    std::vector<MegatronConfig> configs;
    for (const Shape& shape : {Shape{1, 2, 4, 1, 1}, Shape{2, 2, 2, 1, 1}, Shape{1, 1, 8, 1, 1}}) {
      for (int zero : {0, 1}) {
        MegatronConfig config = sweepConfig("llama2-7b", shape, ir::Recompute::kFull, zero);
        config.framework = cost::Framework::kMegatronDeepSpeed;
        config.codePath = cost::frameworkProfile(cost::Framework::kMegatronDeepSpeed).codePath;
        config.precision = precision;
        config.sequenceParallel = false;  // Megatron-DeepSpeed of 2021-22 has none
        configs.push_back(config);
      }
    }
    expectScreenMatches(configs);
  }
}

}  // namespace
}  // namespace autopar::planner
