#include "cost/framework.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "planner/configuration/configuration_estimate.h"
#include "planner/configuration/planner_test_util.h"
#include "planner/plan_evaluation.h"

namespace autopar::planner {
namespace {

using testing::llama7bTp2Dp4;

double stepSecondsOf(const MegatronConfig& config) {
  auto estimate = estimateConfig(config);
  EXPECT_TRUE(estimate) << estimate.error().message;
  return estimate ? estimate->stepSeconds : 0.0;
}

TEST(Framework, EveryProfileParsesByItsOwnName) {
  for (cost::Framework framework :
       {cost::Framework::kMegatronLm2021, cost::Framework::kMegatronLm,
        cost::Framework::kMegatronCore, cost::Framework::kMegatronDeepSpeed,
        cost::Framework::kPytorchFsdp, cost::Framework::kTorchtitan, cost::Framework::kMindSpore,
        cost::Framework::kMindSpeed, cost::Framework::kComposer}) {
    const cost::FrameworkProfile& profile = cost::frameworkProfile(framework);
    EXPECT_EQ(profile.framework, framework);
    auto parsed = cost::parseFramework(profile.name);
    ASSERT_TRUE(parsed) << profile.name;
    EXPECT_EQ(parsed->framework, framework);
    EXPECT_EQ(parsed->release, "");
    // The profile's own tag names the profile.
    auto tagged = cost::parseFramework(fmt::format("{}@{}", profile.name, profile.tag));
    ASSERT_TRUE(tagged) << profile.name;
    EXPECT_EQ(tagged->release, "");
    EXPECT_FALSE(profile.models.empty());
    EXPECT_TRUE(profile.can.runsZero(0)) << profile.name << ": plain data parallelism";
  }
  auto unknown = cost::parseFramework("deepspeed");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message,
            "--framework 'deepspeed': expected one of megatron-lm-2021, megatron-lm, "
            "megatron-core, megatron-deepspeed, pytorch-fsdp, torchtitan, mindspore, mindspeed, "
            "composer");
}

TEST(Framework, RefusesWhatTheFrameworkCannotRun) {
  const auto& lm = cost::frameworkProfile(cost::Framework::kMegatronLm);
  EXPECT_TRUE(cost::checkRunnable(lm, {.tp = 8, .pp = 4, .dp = 2, .zero = 1}, "bf16"));
  EXPECT_EQ(cost::checkRunnable(lm, {.tp = 8, .cp = 2}, "bf16").error().message.substr(0, 45),
            "--framework megatron-lm: cannot run --cp 2 (M");
  EXPECT_FALSE(cost::checkRunnable(lm, {.tp = 8}, "fp8")) << "Transformer Engine came in 2023";
  EXPECT_FALSE(cost::checkRunnable(lm, {.dp = 8, .zero = 3}, "bf16"));
  // Sequence parallelism and selective recompute came with Megatron-LM v3.0 (2022).
  EXPECT_TRUE(cost::checkRunnable(lm, {.tp = 8, .sequenceParallel = true}, "bf16"));
  const auto& sc21 = cost::frameworkProfile(cost::Framework::kMegatronLm2021);
  EXPECT_FALSE(cost::checkRunnable(sc21, {.tp = 8, .sequenceParallel = true}, "fp16"));
  EXPECT_FALSE(
      cost::checkRunnable(sc21, {.tp = 8, .recompute = ir::Recompute::kSelective}, "fp16"));
  EXPECT_TRUE(cost::checkRunnable(sc21, {.tp = 8, .recompute = ir::Recompute::kFull}, "fp16"));
  const auto& fsdp = cost::frameworkProfile(cost::Framework::kPytorchFsdp);
  EXPECT_TRUE(cost::checkRunnable(fsdp, {.dp = 8, .zero = 3}, "bf16"));
  EXPECT_FALSE(cost::checkRunnable(fsdp, {.tp = 2, .dp = 4, .zero = 3}, "bf16"));
  EXPECT_FALSE(cost::checkRunnable(fsdp, {.dp = 8}, "fp8"));
  const auto& composer = cost::frameworkProfile(cost::Framework::kComposer);
  EXPECT_TRUE(cost::checkRunnable(composer, {.dp = 8, .zero = 3}, "fp8")) << "Composer's AMP_FP8";
  EXPECT_EQ(composer.codePath.loss, ir::LossKernel::kFused);
  EXPECT_EQ(fsdp.codePath.loss, ir::LossKernel::kFp32);
  const auto& titan = cost::frameworkProfile(cost::Framework::kTorchtitan);
  EXPECT_TRUE(cost::checkRunnable(titan, {.tp = 2, .pp = 2, .dp = 2, .cp = 2, .zero = 3}, "fp8"));
  EXPECT_FALSE(
      cost::checkRunnable(titan, {.pp = 4, .schedule = ir::Schedule::kZeroBubbleH1}, "bf16"));
}

/// The code path is what separates the profiles' step times: the 2021 Megatron-LM (unfused
/// attention, a separate gradient-accumulation kernel, nothing overlapped) is the slowest, and
/// each of Megatron-Core's overlaps, switched off alone, makes the step slower.
TEST(Framework, CodePathsOrderTheStepTimes) {
  auto stepOf = [](cost::Framework framework, void (*change)(cost::CodePath&)) {
    MegatronConfig config = llama7bTp2Dp4();
    // TP communication overlap needs sequence parallelism, where the framework has it.
    config.sequenceParallel = cost::frameworkProfile(framework).can.sequenceParallel;
    config.framework = framework;
    config.codePath = cost::frameworkProfile(framework).codePath;
    if (change != nullptr) change(config.codePath);
    return stepSecondsOf(config);
  };
  const double core = stepOf(cost::Framework::kMegatronCore, nullptr);
  EXPECT_GT(stepOf(cost::Framework::kMegatronLm2021, nullptr), 1.2 * core);
  EXPECT_GT(stepOf(cost::Framework::kMegatronCore,
                   [](cost::CodePath& c) { c.overlapGradReduce = false; }),
            core);
  EXPECT_GT(
      stepOf(cost::Framework::kMegatronCore, [](cost::CodePath& c) { c.tpCommOverlap = false; }),
      core);
  EXPECT_GT(stepOf(cost::Framework::kMegatronCore,
                   [](cost::CodePath& c) { c.attention = frontend::AttentionKernel::kUnfused; }),
            core);
}

/// The attention kernel is the profile's: Transformer Engine's cuDNN fused attention under
/// Megatron-Core, FlashAttention-2 (PyTorch's SDPA) under torchtitan. On H100 cuDNN's kernel is
/// faster (cost::CostConstants::cudnnAttentionEfficiency); on A100 the two run alike.
TEST(Framework, TheAttentionKernelIsTheProfilesAndPricedPerArchitecture) {
  using frontend::AttentionKernel;
  EXPECT_EQ(cost::frameworkProfile(cost::Framework::kMegatronCore).codePath.attention,
            AttentionKernel::kCudnn);
  EXPECT_EQ(cost::frameworkProfile(cost::Framework::kTorchtitan).codePath.attention,
            AttentionKernel::kFlash);
  EXPECT_EQ(cost::frameworkProfile(cost::Framework::kMegatronLm).codePath.attention,
            AttentionKernel::kUnfused);
  auto stepOn = [](const char* cluster, AttentionKernel kernel) {
    MegatronConfig config = llama7bTp2Dp4();
    config.cluster = cluster;
    config.seq = 8192;
    config.codePath.attention = kernel;
    return stepSecondsOf(config);
  };
  EXPECT_LT(stepOn("dgx-h100", AttentionKernel::kCudnn),
            stepOn("dgx-h100", AttentionKernel::kFlash));
  EXPECT_DOUBLE_EQ(stepOn("dgx-a100-80g", AttentionKernel::kCudnn),
                   stepOn("dgx-a100-80g", AttentionKernel::kFlash));
}

/// torchtitan before torch 2.9 ran its RMSNorm as eager ops (torchtitan@2024-12), Hugging Face's
/// LlamaRMSNorm still does (pytorch-fsdp): 118 more bytes an element of every norm's input, forward
/// and backward, a few percent of LLaMA2-7B's step on an H100. torch.compile fuses them away.
TEST(Framework, EagerRmsNormPaysItsKernelsTraffic) {
  EXPECT_FALSE(cost::releaseCodePath(cost::Framework::kTorchtitan, "2024-12").fusedNorm);
  EXPECT_TRUE(cost::releaseCodePath(cost::Framework::kTorchtitan, "2026-02").fusedNorm);
  EXPECT_TRUE(cost::frameworkProfile(cost::Framework::kTorchtitan).codePath.fusedNorm);
  EXPECT_FALSE(cost::frameworkProfile(cost::Framework::kPytorchFsdp).codePath.fusedNorm);
  EXPECT_TRUE(cost::frameworkProfile(cost::Framework::kMegatronCore).codePath.fusedNorm);
  auto stepWith = [](bool fusedNorm, bool fusedElementwise) {
    MegatronConfig config = llama7bTp2Dp4(3);
    config.cluster = "dgx-h100";
    config.sequenceParallel = true;  // torchtitan's TP plan shards the norms along the sequence
    config.framework = cost::Framework::kTorchtitan;
    config.frameworkRelease = "2024-12";
    config.codePath = cost::releaseCodePath(config.framework, config.frameworkRelease);
    config.codePath.fusedNorm = fusedNorm;
    config.codePath.fusedElementwise = fusedElementwise;
    return stepSecondsOf(config);
  };
  const double fused = stepWith(true, false);
  const double eager = stepWith(false, false);
  EXPECT_GT(eager / fused, 1.03);
  EXPECT_LT(eager / fused, 1.15);
  EXPECT_DOUBLE_EQ(stepWith(false, true), stepWith(true, true));
}

/// fp8 as Transformer Engine runs it speeds up only the linear GEMMs, and pays a cast per GEMM
/// operand: far from the 2x of the fp8 peak (measured bf16 -> fp8 speed-ups of Megatron-Core
/// recipes on H100 are about 1.2-1.4x, shared/data/published/development.jsonl).
TEST(Framework, Fp8SpeedsUpOnlyTheLinearGemms) {
  MegatronConfig config;
  config.model = "llama2-70b";
  config.cluster = "dgx-h100";
  config.nodes = 8;
  config.tp = 4;
  config.pp = 4;
  config.dp = 4;
  config.vpp = 5;
  config.schedule = ir::Schedule::kInterleaved;
  config.gbs = 128;
  config.sequenceParallel = true;
  config.zero = 1;
  auto bf16 = estimateConfig(config);
  config.precision = "fp8";
  auto fp8 = estimateConfig(config);
  ASSERT_TRUE(bf16 && fp8);
  const double speedup = bf16->stepSeconds / fp8->stepSeconds;
  EXPECT_GT(speedup, 1.1);
  EXPECT_LT(speedup, 1.6);
}

}  // namespace
}  // namespace autopar::planner

namespace autopar::planner {
namespace {

/// LLaMA2-7B on 8 devices under `framework`, no recompute unless given: the estimate of its peak
/// stage's memory.
cost::MemoryBreakdown memoryUnder(cost::Framework framework, ir::Recompute recompute,
                                  int64_t pp = 1, int zero = 0,
                                  void (*change)(cost::CodePath&) = nullptr, int64_t tp = 1) {
  MegatronConfig config;
  config.model = "llama2-7b";
  config.tp = tp;
  config.sequenceParallel = tp > 1;
  config.pp = pp;
  config.dp = 8 / pp / tp;
  config.gbs = 8;
  config.recompute = recompute;
  config.zero = zero;
  config.framework = framework;
  config.codePath = cost::frameworkProfile(framework).codePath;
  if (change != nullptr) change(config.codePath);
  auto estimate = estimateConfig(config);
  EXPECT_TRUE(estimate) << estimate.error().message;
  return estimate ? estimate->evaluated.estimate.stages.back().memory : cost::MemoryBreakdown{};
}

/// The loss's backward workspace: Megatron writes the gradient into the fp32 softmax it kept and
/// only casts it to bf16 (2 bytes a logit); PyTorch's log_softmax and nll_loss backward allocate
/// two fp32 buffers (8 bytes a logit). One micro-batch of 4,096 tokens, 32,000 logits each.
TEST(Framework, LossGradientBuffersFollowTheFramework) {
  constexpr int64_t kLogits = int64_t{4096} * 32000;
  const auto megatron = memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kNone);
  EXPECT_EQ(megatron.workspaceBytes, 2 * kLogits);
  const auto pytorch = memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kNone, 1, 0,
                                   [](cost::CodePath& code) { code.inPlaceLossGradient = false; });
  EXPECT_EQ(pytorch.workspaceBytes, 8 * kLogits);
  EXPECT_EQ(pytorch.activationBytes, megatron.activationBytes);
}

/// torchtitan's chunked loss (ChunkedLossWrapper, 8 chunks) keeps no logits for the backward and
/// holds one chunk's bf16 logits, fp32 copy and two fp32 gradient buffers at a time (14 bytes a
/// logit of the chunk); its release before, torchtitan@2026-05, keeps the fp32 softmax of all of
/// them and holds the two buffers over all of them.
TEST(Framework, AChunkedLossHoldsOneChunksLogits) {
  constexpr int64_t kLogits = int64_t{4096} * 32000;
  const auto chunked = memoryUnder(cost::Framework::kTorchtitan, ir::Recompute::kNone);
  const auto whole = memoryUnder(cost::Framework::kTorchtitan, ir::Recompute::kNone, 1, 0,
                                 [](cost::CodePath& code) { code.loss = ir::LossKernel::kFp32; });
  EXPECT_EQ(whole.activationBytes - chunked.activationBytes, 4 * kLogits);
  EXPECT_EQ(whole.workspaceBytes, 8 * kLogits);
  EXPECT_EQ(chunked.workspaceBytes, 14 * kLogits / 8);
}

/// PyTorch's cross entropy on vocabulary-sharded logits is DTensor's loss_parallel, whose fused
/// backward holds three fp32 buffers of the local logits at once.
TEST(Framework, LossParallelHoldsThreeFp32Buffers) {
  constexpr int64_t kLocalLogits = int64_t{4096} * 32000 / 2;
  const auto pytorch = memoryUnder(
      cost::Framework::kMegatronCore, ir::Recompute::kNone, 1, 0,
      [](cost::CodePath& code) { code.inPlaceLossGradient = false; }, 2);
  EXPECT_EQ(pytorch.workspaceBytes, 3 * 4 * kLocalLogits);
}

/// Megatron keeps a sequence-parallel GEMM's sharded input and gathers it again in backward;
/// PyTorch's DTensor keeps the gathered input.
TEST(Framework, DtensorKeepsGatheredInputs) {
  const auto megatron =
      memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kNone, 1, 0, nullptr, 2);
  const auto dtensor = memoryUnder(
      cost::Framework::kMegatronCore, ir::Recompute::kNone, 1, 0,
      [](cost::CodePath& code) { code.stashGatheredInputs = false; }, 2);
  // The column-parallel GEMMs read two gathered tensors per layer (the attention's and the
  // MLP's normalised inputs) and the head one: each kept whole instead of its half.
  constexpr int64_t kHalfHidden = int64_t{4096} * 4096 * 2 / 2;
  EXPECT_EQ(dtensor.activationBytes - megatron.activationBytes, (32 * 2 + 1) * kHalfHidden);
}

/// torch.distributed.pipelining keeps every micro-batch's stage output to the end of the step:
/// the last stage of 1F1B (two micro-batches) holds both micro-batches' fp32 logits when its
/// last backward runs.
TEST(Framework, PipeliningKeepsEveryMicroBatchsOutput) {
  constexpr int64_t kLogits = int64_t{4096} * 32000;
  const auto megatron = memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kNone, 2);
  const auto kept = memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kNone, 2, 0,
                                [](cost::CodePath& code) { code.pipelineKeepsOutputs = true; });
  EXPECT_EQ(megatron.keptOutputBytes, 0);
  EXPECT_EQ(kept.keptOutputBytes, 2 * 4 * kLogits);
  EXPECT_EQ(kept.activationBytes - megatron.activationBytes, 2 * 4 * kLogits);
}

/// FSDP2 leaves its root unit (embedding, final norm, output projection) gathered after forward,
/// and torchtitan its last block: under ZeRO 3 their bf16 parameters stay whole through the step.
TEST(Framework, Fsdp2RootAndLastBlockStayGathered) {
  constexpr int64_t kEmbeddingAndOutput = 2 * int64_t{32000} * 4096 * 2;
  constexpr int64_t kOneLayer = (4 * int64_t{4096} * 4096 + 3 * int64_t{4096} * 11008) * 2;
  const auto resharded =
      memoryUnder(cost::Framework::kTorchtitan, ir::Recompute::kNone, 1, 3,
                  [](cost::CodePath& code) { code.fsdpRootStaysGathered = false; });
  const auto titan = memoryUnder(cost::Framework::kTorchtitan, ir::Recompute::kNone, 1, 3);
  const int64_t gathered = titan.communicationBytes - resharded.communicationBytes;
  EXPECT_GE(gathered, kEmbeddingAndOutput + kOneLayer);
  EXPECT_LT(gathered, kEmbeddingAndOutput + kOneLayer + (1 << 20)) << "norms only beyond those";
}

/// Full recompute makes each layer again in the backward: its activations are a workspace of
/// their own, larger here than the loss's gradient.
TEST(Framework, FullRecomputeHoldsOneLayerAgain) {
  const auto none = memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kNone);
  const auto full = memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kFull);
  EXPECT_GT(full.workspaceBytes, none.workspaceBytes);
  EXPECT_LT(full.workspaceBytes, none.activationBytes / 8) << "one layer of 32";
}

/// torchtitan's per-op selective policy keeps the attention and every other matmul's output and
/// recomputes the rest of each layer: less than Megatron's selective recompute (the attention
/// core alone) keeps, more than full recompute keeps.
TEST(Framework, TorchtitanSelectiveIsThePerOpPolicy) {
  const auto megatron = memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kSelective);
  const auto full = memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kFull);
  const auto titan = memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kSelective, 1, 0,
                                 [](cost::CodePath& code) { code.selectiveOpPolicy = true; });
  EXPECT_LT(titan.activationBytes, megatron.activationBytes);
  EXPECT_GT(titan.activationBytes, full.activationBytes);
}

/// Eager selective checkpointing caches every output the policy saves; under torch.compile the
/// partitioner keeps only those the backward needs. Of the saved matmuls (q, v, gate, down), the
/// down projection's output feeds only the residual add, so compiled it is not kept: one
/// 4,096 x 4,096 bf16 tensor per layer, 32 layers.
TEST(Framework, CompiledPerOpPolicyKeepsOnlyWhatBackwardNeeds) {
  constexpr int64_t kDownOutputs = int64_t{32} * 4096 * 4096 * 2;
  const auto eager = memoryUnder(cost::Framework::kTorchtitan, ir::Recompute::kSelective);
  const auto compiled = memoryUnder(cost::Framework::kTorchtitan, ir::Recompute::kSelective, 1, 0,
                                    [](cost::CodePath& code) { code.fusedElementwise = true; });
  EXPECT_EQ(eager.activationBytes - compiled.activationBytes, kDownOutputs);
}

/// Under pipeline parallelism torchtitan's FSDP keeps the parameters gathered and accumulates
/// unsharded gradients: ZeRO 3 has ZeRO 1's memory; without pipelining it shards them.
TEST(Framework, TorchtitanFsdpUnderPipelineKeepsZeroOnesMemory) {
  const auto zero1 = memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kNone, 2, 1);
  const auto titan = memoryUnder(cost::Framework::kTorchtitan, ir::Recompute::kNone, 2, 3);
  EXPECT_EQ(titan.parameterBytes, zero1.parameterBytes);
  EXPECT_EQ(titan.gradientBytes, zero1.gradientBytes);
  EXPECT_EQ(titan.optimizerBytes, zero1.optimizerBytes);
  const auto titanNoPipeline =
      memoryUnder(cost::Framework::kTorchtitan, ir::Recompute::kNone, 1, 3);
  const auto zero1NoPipeline =
      memoryUnder(cost::Framework::kMegatronCore, ir::Recompute::kNone, 1, 1);
  EXPECT_LT(titanNoPipeline.parameterBytes, zero1NoPipeline.parameterBytes / 4);
}

/// DeepSpeed's pipeline engine asserts against ZeRO 2 and 3; without a pipeline it runs them.
TEST(Framework, DeepSpeedPipelinesZeroZeroAndOneOnly) {
  const auto& ds = cost::frameworkProfile(cost::Framework::kMegatronDeepSpeed);
  EXPECT_TRUE(cost::checkRunnable(ds, {.tp = 2, .pp = 4, .dp = 2, .zero = 1}, "bf16"));
  EXPECT_TRUE(cost::checkRunnable(ds, {.tp = 8, .dp = 16, .zero = 3}, "fp16"));
  auto refused = cost::checkRunnable(ds, {.pp = 4, .dp = 2, .zero = 2}, "bf16");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("--zero 2 with --pp 4"), std::string::npos)
      << refused.error().message;
}

/// Under bf16, DeepSpeed's BF16_Optimizer keeps a bf16 and an fp32 gradient of every parameter
/// (6 bytes, not 4) and shards the optimizer states even at ZeRO 0, which therefore runs as
/// ZeRO 1; under fp16 neither happens.
TEST(Framework, Bf16OptimizerKeepsBothGradientsAndShardsTheStates) {
  auto noBf16Optimizer = [](cost::CodePath& code) { code.bf16Optimizer = false; };
  const auto ds = memoryUnder(cost::Framework::kMegatronDeepSpeed, ir::Recompute::kFull, 2, 0);
  const auto plain =
      memoryUnder(cost::Framework::kMegatronDeepSpeed, ir::Recompute::kFull, 2, 0, noBf16Optimizer);
  EXPECT_EQ(ds.gradientBytes * 4, plain.gradientBytes * 6);
  EXPECT_EQ(ds.parameterBytes, plain.parameterBytes);
  // ZeRO 0 on 4 replicas: the states of a quarter of the parameters, padded to equal slices.
  EXPECT_NEAR(static_cast<double>(ds.optimizerBytes) / static_cast<double>(plain.optimizerBytes),
              0.25, 0.001);
  ir::TrainingSetup fp16;
  fp16.precision = "fp16";
  fp16.codePath = cost::frameworkProfile(cost::Framework::kMegatronDeepSpeed).codePath;
  EXPECT_FALSE(fp16.bf16OptimizerRuns());
  EXPECT_EQ(fp16.zeroAsRun(), 0);
  EXPECT_FALSE(fp16.fp32Gradients());
}

/// DeepSpeed's ZeRO 1 under its pipeline engine all-reduces the gradients whole: twice a
/// reduce-scatter's bytes (fp16, so BF16_Optimizer stays out of it).
TEST(Framework, DeepSpeedPipelineAllReducesZeroOnesGradients) {
  auto syncSeconds = [](bool allReduce) {
    MegatronConfig config = llama7bTp2Dp4();
    config.pp = 2;
    config.dp = 2;
    config.zero = 1;
    config.precision = "fp16";
    config.framework = cost::Framework::kMegatronDeepSpeed;
    config.codePath = cost::frameworkProfile(cost::Framework::kMegatronDeepSpeed).codePath;
    config.codePath.pipelineAllReducesZero1 = allReduce;
    auto estimate = estimateConfig(config);
    EXPECT_TRUE(estimate) << estimate.error().message;
    return estimate ? estimate->evaluated.report.stages.front().gradientSyncSeconds : 0.0;
  };
  const double allReduced = syncSeconds(true);
  const double reduceScattered = syncSeconds(false);
  EXPECT_GT(reduceScattered, 0);
  EXPECT_NEAR(allReduced / reduceScattered, 2.0, 0.1);
}

/// ZeRO 3 under full recompute gathers each parameter again in the backward, in the same fused
/// buffers as the forward's gathers (FSDP's flat parameter per unit): at 512 ranks, where a
/// collective's ring latency is a millisecond, one gather per parameter would cost several times
/// more. DeepSpeed's ZeRO-3 of 2021 (list collectives) does gather each one alone.
TEST(Framework, RecomputedZeroThreeRegathersInTheForwardsBuffers) {
  auto replay = [](bool listCollectives) {
    MegatronConfig config;
    config.model = "llama2-7b";
    config.cluster = "dgx-h100";
    config.nodes = 64;
    config.dp = 512;
    config.gbs = 512;
    config.zero = 3;
    config.recompute = ir::Recompute::kFull;
    config.framework = cost::Framework::kPytorchFsdp;
    config.codePath = cost::frameworkProfile(cost::Framework::kPytorchFsdp).codePath;
    config.codePath.listCollectives = listCollectives;
    auto estimate = estimateConfig(config);
    EXPECT_TRUE(estimate) << estimate.error().message;
    if (!estimate) return std::pair{0.0, 0.0};
    double gathers = 0;
    for (const cost::FusionGroup& group : estimate->evaluated.report.fusionGroups) {
      for (const cost::FusedCollective& fused : group.collectives) {
        if (!fused.gradient) gathers += fused.seconds;
      }
    }
    return std::pair{estimate->evaluated.report.stages.front().parameterReplaySeconds, gathers};
  };
  const auto [fused, forwardGathers] = replay(false);
  const auto [alone, sameGathers] = replay(true);
  ASSERT_GT(forwardGathers, 0);
  EXPECT_DOUBLE_EQ(forwardGathers, sameGathers);
  // Each parameter is gathered again for the recomputed forward and again for the backward.
  EXPECT_NEAR(fused / forwardGathers, 2.0, 0.05) << fused << " s of regathers";
  EXPECT_GT(alone, 3 * fused);
}

/// Transformer Engine's userbuffers overlap sequence parallelism's collectives: at TP 2 without
/// SP the switch changes nothing; with SP it hides them.
TEST(Framework, TpCommOverlapNeedsSequenceParallelism) {
  auto step = [](bool sequenceParallel, bool overlap) {
    MegatronConfig config = llama7bTp2Dp4();
    config.sequenceParallel = sequenceParallel;
    config.codePath = cost::frameworkProfile(cost::Framework::kMegatronCore).codePath;
    config.codePath.tpCommOverlap = overlap;
    return stepSecondsOf(config);
  };
  EXPECT_DOUBLE_EQ(step(false, true), step(false, false));
  EXPECT_LT(step(true, true), step(true, false));
}

/// An op-level plan priced with --tp-comm-overlap: Transformer Engine's userbuffers overlap the
/// all-gathers and reduce-scatters of sequence parallelism, not the all-reduces of tensor
/// parallelism without it. At TP 8 without SP the forward exposes exactly its all-reduces (the
/// backward's run under the weight-gradient GEMMs, Megatron's asynchronous all-reduce); with SP
/// the gathers are hidden.
TEST(Framework, TpCommOverlapHidesGathersNotAllReduces) {
  auto forward = [](bool sequenceParallel) {
    PlanOptions options;
    options.model = "llama2-7b";
    options.devices = 8;
    options.modelOptions.parallel =
        ir::ParallelConfig{.tp = 8, .sequenceParallel = sequenceParallel};
    options.modelOptions.dataParallelFromDevices = true;
    options.frameworkNamed = true;
    options.setup.framework = cost::Framework::kMegatronCore;
    auto cluster = loadCluster(options.cluster, options.nodes, options.devices);
    EXPECT_TRUE(cluster);
    auto evaluated = evaluate(options, *cluster, options.modelOptions);
    EXPECT_TRUE(evaluated) << evaluated.error().message;
    return evaluated ? evaluated->report.stages.front() : cost::StageCost{};
  };
  const cost::StageCost reduced = forward(false);
  ASSERT_GT(reduced.forwardAllReduceSeconds, 0);
  EXPECT_NEAR(reduced.forwardCommSeconds, reduced.forwardAllReduceSeconds, 1e-12);
  EXPECT_NEAR(reduced.backwardCommSeconds, 0, 1e-12);
  const cost::StageCost gathered = forward(true);
  EXPECT_LT(gathered.forwardCommSeconds, reduced.forwardCommSeconds / 10);
}

/// Under context parallelism the ring's key/value exchange runs under the attention: with the
/// switch the step is shorter, by no more than the exchange the switch off exposes.
TEST(Framework, RingExchangeRunsUnderTheAttention) {
  auto estimate = [](bool overlap) {
    MegatronConfig config;
    config.model = "llama2-7b";
    config.cp = 2;
    config.dp = 4;
    config.gbs = 32;
    config.seq = 32768;
    config.recompute = ir::Recompute::kFull;
    config.zero = 3;
    config.codePath = cost::frameworkProfile(cost::Framework::kMegatronCore).codePath;
    config.codePath.overlapRingExchange = overlap;
    auto result = estimateConfig(config);
    EXPECT_TRUE(result) << result.error().message;
    return result ? result->evaluated.report.stages.front() : cost::StageCost{};
  };
  const cost::StageCost hidden = estimate(true);
  const cost::StageCost waits = estimate(false);
  ASSERT_GT(waits.forwardRingSeconds, 0);
  EXPECT_LT(hidden.forwardCommSeconds, waits.forwardCommSeconds);
  EXPECT_NEAR(waits.forwardCommSeconds - hidden.forwardCommSeconds,
              std::min(waits.forwardRingSeconds, waits.forwardAttentionSeconds), 1e-9);
}

}  // namespace
}  // namespace autopar::planner
