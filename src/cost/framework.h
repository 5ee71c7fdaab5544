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
  /// The zero-bubble H1 schedule, with Qi et al.'s patch (sail-sg/zero-bubble-pipeline-
  /// parallelism's zbpp_light patches Megatron-LM and Megatron-Core); no stock framework runs it.
  bool zeroBubble = false;
  bool fp8 = false;
  /// The ZeRO stages it runs, bit z for stage z (0: plain data parallelism).
  uint8_t zeroStages = 0b0001;
  [[nodiscard]] bool runsZero(int zero) const {
    return zero >= 0 && zero <= 3 && ((zeroStages >> zero) & 1) != 0;
  }
};

struct FrameworkProfile {
  Framework framework;
  std::string_view name;     ///< the --framework value
  std::string_view summary;  ///< what it stands for, one line
  CodePath codePath;         ///< the attention kernel and codePathSwitches()' settings
  Capabilities can;
};

/// "megatron-lm-2021", "megatron-lm", "megatron-core", "megatron-deepspeed", "pytorch-fsdp",
/// "torchtitan", "mindspore", "mindspeed", "composer"; the error lists them.
Expected<Framework> parseFramework(std::string_view name);
const FrameworkProfile& frameworkProfile(Framework framework);

/// The framework a setup on this device runs under when none is named: MindSpeed (Megatron-Core
/// ported to Ascend, with no Transformer Engine) on an Ascend NPU, Megatron-Core elsewhere.
Framework defaultFramework(const cluster::DeviceSpec& device);
/// The accepted names, comma-separated, for help texts and errors.
std::string frameworkNames();

/// Whether the framework can run the configuration in this precision; the error is one line
/// naming the flag: "--framework megatron-lm: cannot run --cp 2 (context parallelism came with
/// Megatron-Core)".
Status checkRunnable(const FrameworkProfile& profile, const ir::ParallelConfig& config,
                     std::string_view precision);

}  // namespace autopar::cost
