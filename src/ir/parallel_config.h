#pragma once
/// \file
/// One parallel configuration: how a training step is split over devices, as the layer-level
/// search chooses it, the block profiler keys it, the frontend builder annotates it, the Plan
/// records it and the exporters write it (Megatron-LM's names: tp, pp, dp, cp, ep, vpp, mbs).
/// The micro-batch count is not part of it: the global batch, which is the training run's and not
/// a parallel choice, fixes it as global batch / (dp x mbs).
///   TP 8 PP 4 DP 2, 1F1B, micro-batches of 1, sequence parallel, selective recompute, ZeRO 1
///   = {.tp = 8, .pp = 4, .dp = 2, .mbs = 1, .sequenceParallel = true,
///      .recompute = Recompute::kSelective, .zero = 1}

#include <fmt/format.h>

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/expected.h"

namespace autopar::ir {

/// The pipeline schedule (sim/schedule.h runs each): GPipe (all forwards, then all backwards),
/// 1F1B (PipeDream-Flush), Megatron-LM's interleaved 1F1B over vpp model chunks per stage, and
/// zero-bubble H1 (Qi et al. 2023: weight gradients deferred into the bubbles).
enum class Schedule { kGPipe, k1F1B, kInterleaved, kZeroBubbleH1 };

/// Layer recompute: none, selective (the attention core, Korthikanti et al. 2022), or every layer
/// in full.
enum class Recompute { kNone, kSelective, kFull };

/// "gpipe", "1f1b", "interleaved", "zb-h1"; the error lists the accepted names.
Expected<Schedule> parseSchedule(std::string_view name);
std::string_view scheduleName(Schedule schedule);

/// "none", "selective", "full"; the error lists the accepted names.
Expected<Recompute> parseRecompute(std::string_view name);
std::string_view recomputeName(Recompute recompute);

/// A training step's pipeline: the simulator builds its schedule from it (sim/schedule.h), the
/// step model prices it (sim/step_estimate.h) and the plan records it (plan/plan.h).
struct PipelineShape {
  int stages = 1;         ///< p: pipeline stages (devices along the pipeline)
  int virtualStages = 1;  ///< v: model chunks per stage (> 1 only for the interleaved schedule)
  int microBatches = 1;   ///< m: micro-batches per training step
  Schedule schedule = Schedule::k1F1B;
  bool operator==(const PipelineShape&) const = default;
};

struct ParallelConfig;
/// "TP 2 CP 2 PP 8 DP 2 EP 2 MBS 1 SP zb-h1": a configuration's shape in report lines.
std::string shapeName(const ParallelConfig& config);

struct ParallelConfig {
  int64_t tp = 1;   ///< tensor parallel
  int64_t pp = 1;   ///< pipeline stages
  int64_t dp = 1;   ///< data parallel
  int64_t cp = 1;   ///< context parallel
  int64_t ep = 1;   ///< expert parallel, carved out of dp (Megatron-Core)
  int64_t vpp = 1;  ///< model chunks per stage (interleaved)
  int64_t mbs = 1;  ///< micro-batch size per data-parallel replica
  Schedule schedule = Schedule::k1F1B;
  bool sequenceParallel = false;
  Recompute recompute = Recompute::kNone;
  int zero = 0;  ///< ZeRO stage: 1 optimizer states, 2 and gradients, 3 and parameters sharded

  [[nodiscard]] int64_t worldSize() const { return tp * pp * dp * cp; }
  [[nodiscard]] bool zeroBubble() const { return schedule == Schedule::kZeroBubbleH1; }
  auto operator<=>(const ParallelConfig&) const = default;
};

}  // namespace autopar::ir

/// Schedules and recompute modes print by their names ("zb-h1", "selective") in reports.
template <>
struct fmt::formatter<autopar::ir::Schedule> : fmt::formatter<std::string_view> {
  auto format(autopar::ir::Schedule schedule, format_context& context) const {
    return fmt::formatter<std::string_view>::format(autopar::ir::scheduleName(schedule), context);
  }
};

template <>
struct fmt::formatter<autopar::ir::Recompute> : fmt::formatter<std::string_view> {
  auto format(autopar::ir::Recompute recompute, format_context& context) const {
    return fmt::formatter<std::string_view>::format(autopar::ir::recomputeName(recompute), context);
  }
};
