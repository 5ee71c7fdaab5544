#pragma once
/// \file
/// Framework profiles: what a training framework's code path does, as far as the step time and
/// memory see it, and which parallel configurations it can run at all. The same TP 8 PP 4
/// configuration runs at different speeds under the 2021 Megatron-LM (attention with the score
/// matrix in memory, gradient sync after the backward) and under Megatron-Core (fused attention,
/// the gradient reduce and the parameter gather overlapped). docs/frameworks.md gives the
/// framework source or documentation behind every setting.
///   frameworkProfile(Framework::kMegatronCore).codePath.overlapGradReduce == true
///
/// Every switch of the code path (a bool of ir::CodePath, which the training setup carries) is
/// declared once, in codePathSwitches(): its flag, its doc line and its default under each
/// profile. The command line's --SWITCH / --no-SWITCH flags, their
/// --help, the profiles' code paths and docs/frameworks.md's table are made from it, and the cost
/// model reads the CodePath the request carries (cost::EvaluateOptions::codePath).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cluster/cluster.h"
#include "ir/parallel_config.h"
#include "ir/training_setup.h"
#include "util/expected.h"

namespace autopar::cost {

// The framework and its code path are part of the training setup (ir/training_setup.h).
using ir::CodePath;
using ir::Framework;
using ir::kFrameworkCount;

/// One switch of the code path, declared once.
struct CodePathSwitch {
  std::string_view
      flag;  ///< "overlap-grad-reduce": --overlap-grad-reduce, --no-overlap-grad-reduce
  std::string_view column;  ///< its column in docs/frameworks.md's table
  std::string_view doc;     ///< what it does, one line (--help, docs)
  bool CodePath::*field;
  /// Its setting under each profile, by Framework.
  std::array<bool, kFrameworkCount> byProfile;
};

/// Every switch, in --help's order.
std::span<const CodePathSwitch> codePathSwitches();

/// The key a yaml or JSON config spells the switch with: its flag in snake case, as Megatron-LM's
/// arguments and NeMo's configs spell theirs ("overlap_grad_reduce").
std::string yamlKey(const CodePathSwitch& codeSwitch);

/// "--grad-reduce-in-bf16": the flag that turns the switch of this field on.
std::string switchFlag(bool CodePath::*field);

/// What the framework can run.
struct Capabilities {
  bool tensorParallel = true;
  bool pipelineParallel = true;
  bool interleaved = true;
  bool contextParallel = false;
  bool expertParallel = false;
  /// Sequence parallelism and selective recompute (Korthikanti et al. 2022, Megatron-LM v3.0):
  /// absent from the Megatron-LM of 2021 and from Megatron-DeepSpeed's 2021-22 code.
  bool sequenceParallel = true;
  bool selectiveRecompute = true;
  /// The zero-bubble H1 schedule, with Qi et al.'s patch (sail-sg/zero-bubble-pipeline-
  /// parallelism's zbpp_light patches Megatron-LM and Megatron-Core); no stock framework runs it.
  bool zeroBubble = false;
  bool fp8 = false;
  /// The ZeRO stages it runs, bit z for stage z (0: plain data parallelism).
  uint8_t zeroStages = 0b0001;
  /// ZeRO 1 and 2 run as MindSpore's optimizer parallel (semi-auto and auto parallel): each
  /// parameter of parallel_optimizer_threshold (64 KB) or more is stored as its minimal slice and
  /// all-gathered for every micro-batch that uses it (MindSpore's MicroStepAllGather under a
  /// pipeline or gradient accumulation: frontend/parallel/step_parallel.cc), the gradients
  /// accumulated whole and reduce-scattered once a step, or every micro-batch under ZeRO 2
  /// (gradient_accumulation_shard). Otherwise ZeRO 1 and 2 are a distributed optimizer
  /// (Megatron-LM's, FSDP's SHARD_GRAD_OP): whole parameters, sharded states, and the updated
  /// slices all-gathered once a step.
  bool zeroAsOptimizerParallel = false;
  /// ZeRO 2 and 3 run under pipeline parallelism (DeepSpeed's pipeline engine asserts against
  /// them: deepspeed/runtime/pipe/engine.py, "ZeRO-2 and ZeRO-3 are incompatible with pipeline
  /// parallelism").
  bool shardedGradientsUnderPipeline = true;
  [[nodiscard]] bool runsZero(int zero) const {
    return zero >= 0 && zero <= 3 && ((zeroStages >> zero) & 1) != 0;
  }
};

/// An earlier release of a framework whose code path differs from the profile's: named as
/// NAME@TAG on the command line or in a run yaml ("composer@2023-10"). docs/frameworks.md cites
/// the source of each.
struct ProfileRelease {
  Framework framework;
  std::string_view tag;           ///< the year and month it was current: "2023-10"
  std::string_view release;       ///< which release, and what differs: "llm-foundry v0.3.0 (...)"
  ir::AttentionKernel attention;  ///< the attention kernel it ran
  ir::LossKernel loss;            ///< the loss kernel it ran
  /// Whether its RMSNorm ran as one kernel (CodePath::fusedNorm); empty: as the profile's.
  std::optional<bool> fusedNorm;
  /// Its data parallelism without sharding (DDP, ZeRO 0) runs only when no other degree does
  /// (torchtitan v0.2.2: "DDP has not supported > 1D parallelism").
  bool replicasRunAlone = false;
};

struct FrameworkProfile {
  Framework framework;
  std::string_view name;     ///< the --framework value
  std::string_view summary;  ///< what it stands for, one line
  /// The releases its code path models, oldest to newest ("Megatron-Core 0.8 (2024) to
  /// Megatron-LM d98e8a6 (2026-08)"), and the tag of the newest, which NAME@TAG also accepts.
  std::string_view models;
  std::string_view tag;
  CodePath codePath;  ///< the attention kernel and codePathSwitches()' settings
  Capabilities can;
  /// Its earlier releases with a code path of their own.
  [[nodiscard]] std::span<const ProfileRelease> earlier() const;
  /// The earlier release tagged `tag`, or null (the profile's own, or no such release).
  [[nodiscard]] const ProfileRelease* earlierRelease(std::string_view tag) const;
};

/// A --framework value: the profile, and the earlier release it names, if any.
struct FrameworkChoice {
  Framework framework;
  std::string release;  ///< a ProfileRelease's tag; empty: the profile's code path
};

/// "megatron-lm-2021", "megatron-lm", "megatron-core", "megatron-deepspeed", "pytorch-fsdp",
/// "torchtitan", "mindspore", "mindspeed", "composer", each optionally @TAG: the profile's own tag
/// or an earlier release's; the errors list them.
Expected<FrameworkChoice> parseFramework(std::string_view name);
const FrameworkProfile& frameworkProfile(Framework framework);
/// The code path of the framework at the release (empty: the profile's own).
CodePath releaseCodePath(Framework framework, std::string_view release);
/// The attention and loss kernels by the names --attention and --loss take ("flash1",
/// "chunked"); an unknown name is one line listing them: "--loss x: expected fp32, fused or
/// chunked".
Expected<ir::AttentionKernel> parseAttentionKernel(std::string_view name);
Expected<ir::LossKernel> parseLossKernel(std::string_view name);
std::string_view lossKernelName(ir::LossKernel kernel);
/// "composer@2023-10", or the profile's name where the release is its own.
std::string frameworkLabel(Framework framework, std::string_view release);

/// How the framework's Adam holds its state when --optimizer-state does not say: MindFormers'
/// Adam variants keep fp32 moments beside the 16-bit weight they update in place, with no master
/// copy (fp32-moments, 8 bytes a parameter); the others keep an fp32 master copy and moments
/// (fp32, 12).
ir::OptimizerState defaultOptimizerState(Framework framework);

/// The framework a setup on this device runs under when none is named: MindSpeed (Megatron-Core
/// ported to Ascend, with no Transformer Engine) on an Ascend NPU, Megatron-Core elsewhere.
Framework defaultFramework(const cluster::DeviceSpec& device);
/// The accepted names, comma-separated, for help texts and errors.
std::string frameworkNames();

/// Whether the framework, at the release named (empty: the profile's), can run the configuration
/// in this precision; the error is one line naming the flag: "--framework megatron-lm: cannot
/// run --cp 2 (context parallelism came with Megatron-Core)".
Status checkRunnable(const FrameworkProfile& profile, const ir::ParallelConfig& config,
                     std::string_view precision, std::string_view release = {});

}  // namespace autopar::cost
