#include "planner/configuration/estimate_advice.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <utility>

#include "ir/setting.h"
#include "planner/inputs.h"

namespace autopar::planner {

namespace {

using ir::flag;
using Setting = ir::Setting;

struct Candidate {
  std::string flags;
  MegatronConfig config;
};

/// The single changes worth trying, each a copy of `config`.
std::vector<Candidate> candidatesOf(const MegatronConfig& config) {
  std::vector<Candidate> candidates;
  auto add = [&](std::string flags, const std::function<void(MegatronConfig&)>& change) {
    MegatronConfig changed = config;
    change(changed);
    candidates.push_back({std::move(flags), std::move(changed)});
  };
  for (int zero = config.zero + 1; zero <= 3; ++zero) {
    add(flag(Setting::kZero, zero), [&](MegatronConfig& c) { c.zero = zero; });
  }
  for (ir::Recompute recompute : {ir::Recompute::kSelective, ir::Recompute::kFull}) {
    if (recompute <= config.recompute || ir::recomputedBlocks(config.placement) > 0) continue;
    add(flag(Setting::kRecompute, recompute), [&](MegatronConfig& c) { c.recompute = recompute; });
  }
  if (config.precision != "fp16" && !config.codePath.gradReduceInBf16) {
    add(cost::switchFlag(&ir::CodePath::gradReduceInBf16),
        [](MegatronConfig& c) { c.codePath.gradReduceInBf16 = true; });
  }
  // Twice the model parallelism on the same devices; a given placement fixes the stages.
  if (config.dp % 2 == 0) {
    const int64_t dp = config.dp / 2;
    const std::string dpFlag = flag(Setting::kDp, dp);
    add(flag(Setting::kTp, 2 * config.tp) + " " + dpFlag, [&](MegatronConfig& c) {
      c.tp *= 2;
      c.dp = dp;
    });
    if (config.placement.empty()) {
      add(flag(Setting::kPp, 2 * config.pp) + " " + dpFlag, [&](MegatronConfig& c) {
        c.pp *= 2;
        c.dp = dp;
      });
    }
    add(flag(Setting::kCp, 2 * config.cp) + " " + dpFlag, [&](MegatronConfig& c) {
      c.cp *= 2;
      c.dp = dp;
    });
  }
  if (config.mbs % 2 == 0) {
    add(flag(Setting::kMbs, config.mbs / 2), [](MegatronConfig& c) { c.mbs /= 2; });
  }
  return candidates;
}

}  // namespace

std::vector<FitChange> changesThatFit(const MegatronConfig& config, size_t most) {
  std::vector<FitChange> fitting;
  for (Candidate& candidate : candidatesOf(config)) {
    // A change the framework or the model cannot run is refused by the estimate: not advice.
    auto estimate = estimateConfig(candidate.config);
    if (!estimate || !estimate->fits()) continue;
    fitting.push_back({std::move(candidate.flags), estimate->peakBytes(), estimate->stepSeconds});
  }
  std::stable_sort(fitting.begin(), fitting.end(), [](const FitChange& a, const FitChange& b) {
    return a.stepSeconds < b.stepSeconds;
  });
  if (fitting.size() > most) fitting.resize(most);
  return fitting;
}

OverflowAdvice overflowAdvice(const ConfigEstimate& estimate, const MegatronConfig& config) {
  const auto& step = estimate.evaluated.estimate;
  const auto& memory = step.peakMemory();
  const std::pair<const char*, int64_t> parts[] = {
      {"parameters", memory.parameterBytes},
      {"gradients", memory.gradientBytes},
      {"optimizer states", memory.optimizerBytes},
      {"activations", memory.activationBytes},
      {"the backward's workspace (loss gradient, recomputed layer)", memory.workspaceBytes},
      {"the CUDA context, NCCL's buffers and the allocator's reserve", memory.runtimeBytes},
      {"communication buffers and gathered parameters", memory.communicationBytes}};
  const auto* largest = std::max_element(
      parts, std::end(parts), [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::string kept =
      estimate.memoryMarginBytes > 0
          ? fmt::format(" less {} kept free", formatBytes(estimate.memoryMarginBytes))
          : "";
  // Under --memory-policy safe a stage fits when its band's top does.
  const bool safe = estimate.memoryPolicy == ir::MemoryPolicy::kSafe;
  const auto stage = static_cast<size_t>(step.peakStage);
  const std::string need = safe && stage < estimate.peakBands.size()
                               ? fmt::format("up to {} (its memory band's top)",
                                             formatBytes(estimate.peakBands[stage].highBytes))
                               : formatBytes(memory.total());
  std::string advice =
      fmt::format("does not fit: stage {} needs {} of {} device memory{}, {} {} the largest part; ",
                  step.peakStage, need, formatBytes(estimate.cluster.device.memoryBytes), kept,
                  largest->first, formatBytes(largest->second));
  std::vector<FitChange> changes = changesThatFit(config);
  if (changes.empty()) {
    return {advice +
                "no single change of ZeRO stage, recompute, gradient dtype, TP, PP, CP or "
                "micro-batch fits it (autopar search looks further)",
            {}};
  }
  std::vector<std::string> named;
  for (const FitChange& change : changes) {
    named.push_back(fmt::format("{} ({}, step {:.3f} s)", change.flags,
                                formatBytes(change.peakBytes), change.stepSeconds));
  }
  return {advice + fmt::format("fits with {}", fmt::join(named, ", or ")), std::move(changes)};
}

}  // namespace autopar::planner
