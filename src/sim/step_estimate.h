#pragma once
/// \file
/// The estimate of one training step: a cost report's per-(virtual-)stage costs run through a
/// pipeline schedule.
///
///   step = makespan of the schedule (compute, activation communication, point-to-point sends
///          and the bubble) + the slowest stage's tail: its exposed gradient synchronisation,
///          optimizer step and exposed all-gather of the updated parameters.
/// The makespan splits into compute (recompute included), exposed communication and the bubble;
/// memory per stage is its parameters, gradients, optimizer states, communication buffers and
/// the activations of the micro-batches the schedule holds in flight at its peak.

#include <cstdint>
#include <vector>

#include "cost/graph_cost.h"
#include "ir/stage_estimate.h"
#include "sim/schedule.h"
#include "util/expected.h"

namespace autopar::sim {

/// Declared in ir/stage_estimate.h: the step model fills it, the plan records it.
using ir::StageEstimate;

struct StepEstimate {
  double stepSeconds = 0;
  double computeSeconds = 0;  ///< busiest stage: forward, backward and recompute compute
  double exposedCommunicationSeconds = 0;
  double bubbleSeconds = 0;
  double bubbleFraction = 0;  ///< bubble / (makespan - bubble)
  double optimizerSeconds = 0;
  std::vector<StageEstimate> stages;
  int peakStage = 0;  ///< the stage with the most memory
  [[nodiscard]] const cost::MemoryBreakdown& peakMemory() const {
    return stages.at(static_cast<size_t>(peakStage)).memory;
  }
};

/// `report` holds stages * virtualStages stage costs, virtual stage k on stage k % stages.
Expected<StepEstimate> estimateStep(const cost::CostReport& report, const PipelineShape& config);

/// One block of a stage's timeline: a pipeline action, or a part of the step's tail.
struct TimelineBlock {
  enum Kind { kForward, kBackward, kWeight, kGradientSync, kOptimizer, kParameterGather };
  Kind kind = kForward;
  int microBatch = 0;  ///< pipeline actions only
  int chunk = 0;
  double startSeconds = 0;
  double endSeconds = 0;
  /// The part of a forward or backward that is exposed communication (tensor- or context-
  /// parallel collectives, redistributions), the rest being compute; all of a tail's
  /// communication blocks.
  double communicationSeconds = 0;
};

/// Each stage's blocks in time order: its forwards, backwards (and zero-bubble Ws) as the pipeline
/// simulation runs them, then its exposed gradient synchronisation, optimizer step and exposed
/// parameter all-gather. The gaps are its bubbles. The same simulation as estimateStep, so the
/// slowest tail ends at StepEstimate::stepSeconds.
Expected<std::vector<std::vector<TimelineBlock>>> stepTimeline(const cost::CostReport& report,
                                                               const PipelineShape& config);

}  // namespace autopar::sim
