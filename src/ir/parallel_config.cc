#include "ir/parallel_config.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace autopar::ir {

namespace {

constexpr std::array<std::pair<Schedule, std::string_view>, 4> kSchedules{{
    {Schedule::kGPipe, "gpipe"},
    {Schedule::k1F1B, "1f1b"},
    {Schedule::kInterleaved, "interleaved"},
    {Schedule::kZeroBubbleH1, "zb-h1"},
}};

constexpr std::array<std::pair<Recompute, std::string_view>, 3> kRecomputes{{
    {Recompute::kNone, "none"},
    {Recompute::kSelective, "selective"},
    {Recompute::kFull, "full"},
}};

}  // namespace

Expected<Schedule> parseSchedule(std::string_view name) {
  for (const auto& [schedule, candidate] : kSchedules) {
    if (candidate == name) return schedule;
  }
  return Error{fmt::format(
      "unknown pipeline schedule '{}'; expected one of: gpipe, 1f1b, interleaved, zb-h1", name)};
}

std::string_view scheduleName(Schedule schedule) {
  for (const auto& [candidate, name] : kSchedules) {
    if (candidate == schedule) return name;
  }
  return "unknown";
}

Expected<Recompute> parseRecompute(std::string_view name) {
  for (const auto& [recompute, candidate] : kRecomputes) {
    if (candidate == name) return recompute;
  }
  return Error{fmt::format("unknown recompute '{}'; expected none, selective or full", name)};
}

std::string shapeName(const ParallelConfig& config) {
  std::string name = fmt::format("TP {}", config.tp);
  if (config.cp > 1) name += fmt::format(" CP {}", config.cp);
  name += fmt::format(" PP {} DP {}", config.pp, config.dp);
  if (config.ep > 1) name += fmt::format(" EP {}", config.ep);
  name += fmt::format(" MBS {}", config.mbs);
  if (config.sequenceParallel) name += " SP";
  if (config.zeroBubble()) name += " zb-h1";
  return name;
}

std::string_view recomputeName(Recompute recompute) {
  for (const auto& [candidate, name] : kRecomputes) {
    if (candidate == recompute) return name;
  }
  return "unknown";
}

}  // namespace autopar::ir
