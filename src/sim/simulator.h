#pragma once
/// \file
/// Event simulation of one training step of a pipeline schedule.
///
/// Each stage runs its actions in order, one at a time. With vs the virtual stage of an action:
///   - F(vs, mb) starts once F(vs-1, mb) has finished and its output has crossed the link
///     (p2pSeconds of the stage holding vs-1); F(0, mb) waits for nothing;
///   - B(vs, mb) starts once B(vs+1, mb) has finished and its gradient has crossed the same link
///     back (p2pSeconds of the stage holding vs), and after F(vs, mb); the last virtual stage
///     waits only for its own forward.
/// A link carries any number of messages at once, and a transfer does not occupy either stage.
///
/// Zero-bubble H1: a backward is B (its backward less its weight-gradient part; the previous stage
/// waits only for this) and W (the weight-gradient part). A stage runs a pending W (oldest first)
///   - when it would otherwise idle waiting for its next input and the W ends before the input
///     arrives;
///   - before a forward that would hold more micro-batches than 1F1B's peak, the first stage's p
///     (a micro-batch is held from its forward to its W), so later stages may defer up to s Ws;
///   - after its last B, for the W's still pending.
///
/// Example: 1F1B, p = 4, m = 8, forward 1 s and backward 2 s on every stage, no p2p cost:
/// makespan (m + p - 1) * 3 = 33 s, ideal 8 * 3 = 24 s, bubble fraction (p - 1) / m = 0.375.

#include <cstdint>
#include <vector>

#include "sim/schedule.h"
#include "util/expected.h"

namespace autopar::sim {

/// Costs of one stage, one entry per model chunk (size virtualStages), for ONE micro-batch.
struct StageCosts {
  std::vector<double> forwardSeconds;
  std::vector<double> backwardSeconds;
  /// Bytes one micro-batch of the chunk keeps from the start of its forward to the end of its
  /// backward (its W under zero-bubble).
  std::vector<int64_t> activationBytes;
  /// The weight-gradient part of backwardSeconds, which zero-bubble H1 runs as W (empty: none).
  std::vector<double> weightSeconds;
  /// Bytes of one micro-batch's chunk output that the pipeline runtime keeps from its forward to
  /// the end of the step (torch.distributed.pipelining's output_chunks; empty: none).
  std::vector<int64_t> keptOutputBytes;
};

struct SimulationInput {
  PipelineShape shape;
  std::vector<StageCosts> stages;  ///< one per pipeline stage
  /// One per stage (or empty for free links): seconds to send one micro-batch's boundary
  /// activation from stage s to the next virtual stage, and its gradient back. The last entry is
  /// the wrap from stage p-1 to stage 0 that the interleaved schedule uses.
  std::vector<double> p2pSeconds;
  /// Record each stage's actions with their times (StageResult::spans), for a timeline.
  bool recordSpans = false;
};

/// One action as a stage ran it: a forward, a backward (B alone under zero-bubble), or a
/// zero-bubble weight-gradient pass W.
struct Span {
  enum Kind { kForward, kBackward, kWeight };
  Kind kind = kForward;
  int microBatch = 0;
  int chunk = 0;
  double startSeconds = 0;
  double endSeconds = 0;
};

struct StageResult {
  double busySeconds = 0;    ///< sum of its actions' durations
  double finishSeconds = 0;  ///< when its last action ends
  /// Most (micro-batch, chunk) pairs whose forward has started and whose backward has not ended.
  int peakInFlight = 0;
  /// The largest activations held at once: the in-flight micro-batches weighted by each chunk's
  /// activationBytes, plus the outputs kept so far (StageCosts::keptOutputBytes).
  int64_t peakActivationBytes = 0;
  int64_t peakKeptOutputBytes = 0;  ///< of peakActivationBytes, the kept outputs at that moment
  std::vector<Span> spans;          ///< with recordSpans: its actions in the order it ran them
};

struct SimulationResult {
  double makespanSeconds = 0;  ///< when the last action of any stage ends
  double idealSeconds = 0;     ///< the busiest stage's busySeconds: the makespan with no bubble
  double bubbleSeconds = 0;    ///< makespan - ideal
  double bubbleFraction = 0;   ///< bubble / ideal (0 when ideal is 0)
  std::vector<StageResult> stages;
};

/// Simulates buildSchedule(input.shape). Errors name the field at fault, e.g.
/// "stages[1].forward_seconds: expected 2 entries (one per model chunk), got 1".
Expected<SimulationResult> simulate(const SimulationInput& input);

/// Simulates a given schedule, which must pass checkSchedule. Returns an error naming a blocked
/// stage when the schedule deadlocks (its stages wait on each other in a cycle).
/// Runs in O(p * m * v).
Expected<SimulationResult> simulateSchedule(const SimulationInput& input, const Schedule& schedule);

}  // namespace autopar::sim
