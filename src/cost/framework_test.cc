// The framework table: each code-path switch is named once and its flag leads back to it; the
// refusals name the framework and the setting it cannot run.

#include "cost/framework.h"

#include <gtest/gtest.h>

#include <set>

namespace autopar::cost {
namespace {

TEST(CodePathSwitches, EachFieldHasOneFlag) {
  std::set<std::string_view> flags;
  for (const CodePathSwitch& each : codePathSwitches()) {
    EXPECT_TRUE(flags.insert(each.flag).second) << each.flag << " names two switches";
    EXPECT_EQ(switchFlag(each.field), fmt::format("--{}", each.flag));
  }
  EXPECT_EQ(switchFlag(&CodePath::gradReduceInBf16), "--grad-reduce-in-bf16");
}

TEST(Frameworks, RefusalsNameTheFrameworkAndTheSetting) {
  EXPECT_FALSE(parseFramework("megatron").ok());
  EXPECT_EQ(parseFramework("megatron").error().message.rfind("--framework 'megatron': ", 0), 0u)
      << parseFramework("megatron").error().message;
  ir::ParallelConfig config;
  config.cp = 2;
  const auto refused = checkRunnable(frameworkProfile(Framework::kMegatronLm2021), config, "bf16");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("cannot run --cp 2"), std::string::npos)
      << refused.error().message;
  config.cp = 1;
  EXPECT_TRUE(checkRunnable(frameworkProfile(Framework::kMegatronCore), config, "bf16").ok());
}

}  // namespace
TEST(Frameworks, AnEarlierReleaseRunsItsOwnAttentionKernel) {
  // llm-foundry v0.3.0's MPT ran the Triton FlashAttention kernel (attn_impl: triton).
  auto release = parseFramework("composer@2023-10");
  ASSERT_TRUE(release) << release.error().message;
  EXPECT_EQ(release->framework, Framework::kComposer);
  EXPECT_EQ(release->release, "2023-10");
  EXPECT_EQ(releaseCodePath(release->framework, release->release).attention,
            ir::AttentionKernel::kFlash1);
  EXPECT_EQ(releaseCodePath(Framework::kComposer, "").attention, ir::AttentionKernel::kFlash);
  EXPECT_EQ(frameworkLabel(Framework::kComposer, "2023-10"), "composer@2023-10");
  EXPECT_EQ(frameworkLabel(Framework::kComposer, ""), "composer");
  // Everything else of the code path is the profile's.
  CodePath expected = frameworkProfile(Framework::kComposer).codePath;
  expected.attention = ir::AttentionKernel::kFlash1;
  EXPECT_EQ(releaseCodePath(Framework::kComposer, "2023-10"), expected);
}

TEST(Frameworks, TorchtitanChunksItsLossSinceItsRecipesDo) {
  EXPECT_EQ(frameworkProfile(Framework::kTorchtitan).codePath.loss, ir::LossKernel::kChunked);
  auto before = parseFramework("torchtitan@2026-05");
  ASSERT_TRUE(before) << before.error().message;
  const CodePath code = releaseCodePath(before->framework, before->release);
  EXPECT_EQ(code.loss, ir::LossKernel::kFp32);
  EXPECT_EQ(code.attention, ir::AttentionKernel::kFlash);
  // The profile's own tag is the profile.
  auto own = parseFramework("torchtitan@2026-08");
  ASSERT_TRUE(own);
  EXPECT_EQ(own->release, "");
  // Before torch 2.9 its RMSNorm ran as eager ops; nothing else of the code path differs.
  CodePath eagerNorm = frameworkProfile(Framework::kTorchtitan).codePath;
  eagerNorm.loss = ir::LossKernel::kFp32;
  eagerNorm.fusedNorm = false;
  EXPECT_EQ(releaseCodePath(Framework::kTorchtitan, "2024-12"), eagerNorm);
}

TEST(Frameworks, AnUnknownReleaseListsTheKnownOnes) {
  auto unknown = parseFramework("composer@2022-01");
  ASSERT_FALSE(unknown);
  const std::string& message = unknown.error().message;
  EXPECT_EQ(message.rfind("--framework 'composer@2022-01': expected composer@2025-07 (", 0), 0u)
      << message;
  EXPECT_NE(message.find(" or composer@2023-10 (llm-foundry v0.3.0"), std::string::npos) << message;
  EXPECT_FALSE(parseFramework("torchtitan@").ok());
}

TEST(Frameworks, KernelsParseByTheNamesTheFlagsTake) {
  EXPECT_EQ(*parseAttentionKernel("flash1"), ir::AttentionKernel::kFlash1);
  EXPECT_EQ(*parseAttentionKernel("cudnn"), ir::AttentionKernel::kCudnn);
  for (ir::LossKernel kernel :
       {ir::LossKernel::kFp32, ir::LossKernel::kFused, ir::LossKernel::kChunked}) {
    EXPECT_EQ(*parseLossKernel(lossKernelName(kernel)), kernel);
  }
  EXPECT_EQ(parseAttentionKernel("fa2").error().message,
            "--attention fa2: expected flash, flash1, cudnn or unfused");
  EXPECT_EQ(parseLossKernel("liger").error().message,
            "--loss liger: expected fp32, fused or chunked");
}

}  // namespace autopar::cost
