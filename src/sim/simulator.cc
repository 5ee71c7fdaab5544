// The simulation needs no event queue ordered by time: a stage runs its actions in a fixed order,
// so an action starts at max(its stage's previous finish, the arrival of its inputs). Actions are
// run in any order that respects the dependencies (a worklist of stages that may advance), which
// gives the same times as a time-ordered simulation. A stage is woken only when an action it may
// wait on finishes, so the work is O(actions) = O(p * m * v). If the worklist empties with actions
// left, the stages wait on each other in a cycle: a deadlock.

#include "sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace autopar::sim {

namespace {

constexpr double kNotRun = -1;

Status checkSeconds(const std::vector<double>& seconds, const std::string& field,
                    size_t expectedSize, const char* perWhat) {
  if (seconds.size() != expectedSize) {
    return Error{fmt::format("{}: expected {} entries (one per {}), got {}", field, expectedSize,
                             perWhat, seconds.size())};
  }
  for (size_t i = 0; i < seconds.size(); ++i) {
    if (!std::isfinite(seconds[i]) || seconds[i] < 0) {
      return Error{
          fmt::format("{}[{}]: expected a finite time >= 0, got {}", field, i, seconds[i])};
    }
  }
  return {};
}

Status checkInput(const SimulationInput& input) {
  const PipelineShape& shape = input.shape;
  if (Status valid = validateShape(shape); !valid) return valid;
  if (static_cast<int>(input.stages.size()) != shape.stages) {
    return Error{fmt::format("stages: expected {} entries (one per pipeline stage), got {}",
                             shape.stages, input.stages.size())};
  }
  const size_t chunks = shape.virtualStages;
  for (int stage = 0; stage < shape.stages; ++stage) {
    const StageCosts& costs = input.stages[stage];
    const std::string field = fmt::format("stages[{}]", stage);
    for (const auto& [name, seconds] : {std::pair{".forward_seconds", &costs.forwardSeconds},
                                        std::pair{".backward_seconds", &costs.backwardSeconds}}) {
      if (Status valid = checkSeconds(*seconds, field + name, chunks, "model chunk"); !valid) {
        return valid;
      }
    }
    if (!costs.weightSeconds.empty()) {
      if (Status valid =
              checkSeconds(costs.weightSeconds, field + ".weight_seconds", chunks, "model chunk");
          !valid) {
        return valid;
      }
      for (size_t c = 0; c < chunks; ++c) {
        if (costs.weightSeconds[c] > costs.backwardSeconds[c]) {
          return Error{fmt::format("{}.weight_seconds[{}]: {} exceeds the backward's {}", field, c,
                                   costs.weightSeconds[c], costs.backwardSeconds[c])};
        }
      }
    }
    if (costs.activationBytes.size() != chunks) {
      return Error{
          fmt::format("{}.activation_bytes: expected {} entries (one per model chunk), got {}",
                      field, chunks, costs.activationBytes.size())};
    }
    if (!costs.keptOutputBytes.empty() && costs.keptOutputBytes.size() != chunks) {
      return Error{
          fmt::format("{}.kept_output_bytes: expected {} entries (one per model chunk), got {}",
                      field, chunks, costs.keptOutputBytes.size())};
    }
  }
  if (input.p2pSeconds.empty()) return {};
  return checkSeconds(input.p2pSeconds, "p2p_seconds", shape.stages, "pipeline stage");
}

/// Finish times of the forwards and backwards run so far, by (virtual stage, micro-batch).
class Timeline {
 public:
  explicit Timeline(const SimulationInput& input)
      : input_(input),
        shape_(input.shape),
        virtualStages_(shape_.stages * shape_.virtualStages),
        forwardFinish_(virtualStages_ * shape_.microBatches, kNotRun),
        backwardFinish_(virtualStages_ * shape_.microBatches, kNotRun) {}

  /// When the inputs of `action` on `stage` have arrived, or nothing if one is not yet computed.
  std::optional<double> inputsArrive(int stage, const Action& action) const {
    const int vs = virtualStageOf(shape_, stage, action.chunk);
    if (action.kind == Action::kForward) {
      if (vs == 0) return 0.0;
      const double previous = finish(Action::kForward, vs - 1, action.microBatch);
      if (previous == kNotRun) return std::nullopt;
      return previous + linkSeconds(vs - 1);
    }
    const double ownForward = finish(Action::kForward, vs, action.microBatch);
    if (ownForward == kNotRun) return std::nullopt;
    if (vs == virtualStages_ - 1) return ownForward;
    const double next = finish(Action::kBackward, vs + 1, action.microBatch);
    if (next == kNotRun) return std::nullopt;
    return std::max(ownForward, next + linkSeconds(vs));
  }

  /// Records that `action` on `stage` finished; returns the stage that waits on it, if any.
  std::optional<int> record(int stage, const Action& action, double finishSeconds) {
    const int vs = virtualStageOf(shape_, stage, action.chunk);
    slot(action.kind, vs, action.microBatch) = finishSeconds;
    const int consumer = action.kind == Action::kForward ? vs + 1 : vs - 1;
    if (consumer < 0 || consumer >= virtualStages_) return std::nullopt;
    return consumer % shape_.stages;
  }

 private:
  /// Seconds to cross the link from virtual stage vs to vs + 1 (or back).
  double linkSeconds(int vs) const {
    return input_.p2pSeconds.empty() ? 0 : input_.p2pSeconds[vs % shape_.stages];
  }
  double finish(Action::Kind kind, int vs, int microBatch) const {
    const auto& times = kind == Action::kForward ? forwardFinish_ : backwardFinish_;
    return times[vs * shape_.microBatches + microBatch];
  }
  double& slot(Action::Kind kind, int vs, int microBatch) {
    auto& times = kind == Action::kForward ? forwardFinish_ : backwardFinish_;
    return times[vs * shape_.microBatches + microBatch];
  }

  const SimulationInput& input_;
  const PipelineShape& shape_;
  int virtualStages_;
  std::vector<double> forwardFinish_;
  std::vector<double> backwardFinish_;
};

double weightSeconds(const StageCosts& costs, int chunk) {
  return costs.weightSeconds.empty() ? 0.0 : costs.weightSeconds[static_cast<size_t>(chunk)];
}

/// Under zero-bubble a backward action is B only; its W runs separately.
double durationSeconds(const StageCosts& costs, const Action& action, bool zeroBubble) {
  if (action.kind == Action::kForward) return costs.forwardSeconds[action.chunk];
  return costs.backwardSeconds[action.chunk] -
         (zeroBubble ? weightSeconds(costs, action.chunk) : 0.0);
}

/// One stage's progress: its next action, and under zero-bubble its pending Ws (the Bs whose W
/// has not run, oldest first) and the micro-batches it holds (forward started, W not yet run).
struct StageState {
  size_t next = 0;
  std::vector<Action> pendingWeights;
  size_t firstPending = 0;
  int held = 0;
  int peakHeld = 0;
  int forwards = 0;  ///< forwards run so far, whose outputs StageCosts::keptOutputBytes keeps
  int64_t peakHeldBytes = 0;  ///< held micro-batches' activations plus the kept outputs, at most
  int64_t keptAtPeak = 0;     ///< of peakHeldBytes, the kept outputs
  [[nodiscard]] bool hasPending() const { return firstPending < pendingWeights.size(); }
};

/// Appends a span to the stage's timeline when the input asks for one.
void recordSpan(bool record, StageResult& result, Span::Kind kind, const Action& action,
                double startSeconds) {
  if (!record) return;
  result.spans.push_back(
      Span{kind, action.microBatch, action.chunk, startSeconds, result.finishSeconds});
}

/// Runs the oldest pending W at the stage's current finish.
void runWeight(const SimulationInput& input, const StageCosts& costs, StageState& state,
               StageResult& result) {
  const Action& backward = state.pendingWeights[state.firstPending++];
  const double start = result.finishSeconds;
  const double seconds = weightSeconds(costs, backward.chunk);
  result.finishSeconds += seconds;
  result.busySeconds += seconds;
  --state.held;
  recordSpan(input.recordSpans, result, Span::kWeight, backward, start);
}

/// Runs every action; fills busySeconds and finishSeconds, or names a stage left waiting.
Status runActions(const SimulationInput& input, const Schedule& schedule,
                  std::vector<StageResult>& results) {
  const int stages = input.shape.stages;
  const bool zeroBubble = input.shape.schedule == ScheduleKind::kZeroBubbleH1;
  Timeline timeline(input);
  std::vector<StageState> states(static_cast<size_t>(stages));
  std::vector<int> worklist;
  for (int stage = stages - 1; stage >= 0; --stage) worklist.push_back(stage);
  while (!worklist.empty()) {
    const int stage = worklist.back();
    worklist.pop_back();
    const StageSchedule& actions = schedule[stage];
    const StageCosts& costs = input.stages[stage];
    StageState& state = states[static_cast<size_t>(stage)];
    StageResult& result = results[stage];
    const int limit = stages;  // 1F1B's peak: the first stage's micro-batches in flight
    for (; state.next < actions.size(); ++state.next) {
      const Action& action = actions[state.next];
      if (zeroBubble && action.kind == Action::kForward && state.held >= limit &&
          state.hasPending()) {
        runWeight(input, costs, state, result);
      }
      const std::optional<double> arrival = timeline.inputsArrive(stage, action);
      if (!arrival) break;
      // Idle until the input arrives: fill it with the Ws that end in time.
      while (zeroBubble && state.hasPending() &&
             result.finishSeconds +
                     weightSeconds(costs, state.pendingWeights[state.firstPending].chunk) <=
                 *arrival) {
        runWeight(input, costs, state, result);
      }
      const double duration = durationSeconds(costs, action, zeroBubble);
      const double start = std::max(result.finishSeconds, *arrival);
      result.finishSeconds = start + duration;
      result.busySeconds += duration;
      recordSpan(input.recordSpans, result,
                 action.kind == Action::kForward ? Span::kForward : Span::kBackward, action, start);
      if (zeroBubble) {
        if (action.kind == Action::kForward) {
          state.peakHeld = std::max(state.peakHeld, ++state.held);
          // One chunk: zero-bubble is not interleaved. Kept outputs only grow at forwards, so
          // the joint peak is at one of them.
          const int64_t kept =
              costs.keptOutputBytes.empty() ? 0 : ++state.forwards * costs.keptOutputBytes.front();
          const int64_t bytes = state.held * costs.activationBytes.front() + kept;
          if (bytes > state.peakHeldBytes) {
            state.peakHeldBytes = bytes;
            state.keptAtPeak = kept;
          }
        }
        if (action.kind == Action::kBackward) state.pendingWeights.push_back(action);
      }
      const std::optional<int> waiting = timeline.record(stage, action, result.finishSeconds);
      if (waiting && *waiting != stage) worklist.push_back(*waiting);
    }
    if (state.next == actions.size()) {
      while (state.hasPending()) runWeight(input, costs, state, result);
    }
  }
  for (int stage = 0; stage < stages; ++stage) {
    // Under zero-bubble a micro-batch is held until its W (one chunk: zero-bubble is not
    // interleaved).
    const StageState& state = states[static_cast<size_t>(stage)];
    if (zeroBubble) {
      results[stage].peakInFlight = state.peakHeld;
      results[stage].peakActivationBytes = state.peakHeldBytes;
      results[stage].peakKeptOutputBytes = state.keptAtPeak;
    }
    const size_t next = state.next;
    if (next == schedule[stage].size()) continue;
    return Error{fmt::format("schedule deadlocks: stage {} waits forever at action {} ({})", stage,
                             next, actionName(schedule[stage][next]))};
  }
  return {};
}

/// Peaks of one stage. A stage runs one action at a time, so the peak over time is the peak
/// over the prefixes of its action list.
void fillPeaks(const StageSchedule& actions, const StageCosts& costs, StageResult& result) {
  int inFlight = 0;
  int64_t activationBytes = 0;
  int64_t keptBytes = 0;
  for (const Action& action : actions) {
    const int sign = action.kind == Action::kForward ? 1 : -1;
    inFlight += sign;
    activationBytes += sign * costs.activationBytes[action.chunk];
    if (action.kind == Action::kForward && !costs.keptOutputBytes.empty()) {
      keptBytes += costs.keptOutputBytes[action.chunk];
    }
    result.peakInFlight = std::max(result.peakInFlight, inFlight);
    if (activationBytes + keptBytes > result.peakActivationBytes) {
      result.peakActivationBytes = activationBytes + keptBytes;
      result.peakKeptOutputBytes = keptBytes;
    }
  }
}

}  // namespace

Expected<SimulationResult> simulate(const SimulationInput& input) {
  if (Status valid = checkInput(input); !valid) return valid.error();
  Expected<Schedule> schedule = buildSchedule(input.shape);
  if (!schedule) return schedule.error();
  return simulateSchedule(input, *schedule);
}

Expected<SimulationResult> simulateSchedule(const SimulationInput& input,
                                            const Schedule& schedule) {
  if (Status valid = checkInput(input); !valid) return valid.error();
  if (Status valid = checkSchedule(input.shape, schedule); !valid) return valid.error();
  SimulationResult result;
  result.stages.resize(input.shape.stages);
  if (Status ran = runActions(input, schedule, result.stages); !ran) return ran.error();
  for (int stage = 0; stage < input.shape.stages; ++stage) {
    StageResult& stageResult = result.stages[stage];
    // Zero-bubble holds a micro-batch until its W; runActions counted those peaks.
    if (input.shape.schedule != ScheduleKind::kZeroBubbleH1) {
      fillPeaks(schedule[stage], input.stages[stage], stageResult);
    }
    result.makespanSeconds = std::max(result.makespanSeconds, stageResult.finishSeconds);
    result.idealSeconds = std::max(result.idealSeconds, stageResult.busySeconds);
  }
  result.bubbleSeconds = result.makespanSeconds - result.idealSeconds;
  result.bubbleFraction = result.idealSeconds > 0 ? result.bubbleSeconds / result.idealSeconds : 0;
  return result;
}

}  // namespace autopar::sim
