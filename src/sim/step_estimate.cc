#include "sim/step_estimate.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/simulator.h"

namespace autopar::sim {

namespace {

SimulationInput simulationInput(const cost::CostReport& report, const PipelineShape& config) {
  SimulationInput input;
  input.shape = config;
  input.stages.resize(static_cast<size_t>(config.stages));
  input.p2pSeconds.assign(static_cast<size_t>(config.stages), 0.0);
  for (size_t k = 0; k < report.stages.size(); ++k) {
    const cost::StageCost& cost = report.stages[k];
    StageCosts& stage = input.stages[k % static_cast<size_t>(config.stages)];
    stage.forwardSeconds.push_back(cost.forwardSeconds);
    stage.backwardSeconds.push_back(cost.backwardSeconds);
    stage.activationBytes.push_back(cost.memory.activationBytes);
    stage.keptOutputBytes.push_back(cost.keptOutputBytes);
    // The weight-gradient matmuls (dW = X^T dY) do about the forward matmuls' work; the rest of
    // backward (input gradients, recompute, communication) is B.
    if (config.schedule == ScheduleKind::kZeroBubbleH1) {
      stage.weightSeconds.push_back(
          std::min(cost.forwardComputeSeconds, cost.backwardComputeSeconds / 2));
    }
    // The link from virtual stage k to k + 1 leaves stage k % p; chunks share it.
    double& link = input.p2pSeconds[k % static_cast<size_t>(config.stages)];
    link = std::max(link, cost.sendSeconds);
  }
  return input;
}

/// Adds a virtual stage's static costs to its stage.
void addStatic(StageEstimate& stage, const cost::StageCost& cost) {
  stage.forwardSeconds += cost.forwardSeconds;
  stage.backwardSeconds += cost.backwardSeconds;
  stage.sendSeconds = std::max(stage.sendSeconds, cost.sendSeconds);
  stage.exposedGradientSyncSeconds += cost.exposedGradientSyncSeconds;
  stage.exposedParameterGatherSeconds += cost.exposedParameterGatherSeconds;
  stage.optimizerSeconds += cost.optimizerSeconds;
  stage.memory.parameterBytes += cost.memory.parameterBytes;
  stage.memory.gradientBytes += cost.memory.gradientBytes;
  stage.memory.optimizerBytes += cost.memory.optimizerBytes;
  stage.memory.hostBytes += cost.memory.hostBytes;
  // The chunks' kept parameter copies add up; their collectives share one buffer slot.
  cost::MemoryBreakdown& memory = stage.memory;
  const int64_t slot = std::max(memory.communicationSlotBytes, cost.memory.communicationSlotBytes);
  memory.communicationBytes += cost.memory.communicationBytes - cost.memory.communicationSlotBytes +
                               slot - memory.communicationSlotBytes;
  memory.communicationSlotBytes = slot;
  // A stage's chunks run their backward passes one at a time.
  stage.memory.workspaceBytes = std::max(stage.memory.workspaceBytes, cost.memory.workspaceBytes);
  stage.optimizerParallelSavedBytes += cost.optimizerParallelSavedBytes;
  stage.optimizerParallelCommSeconds += cost.optimizerParallelCommSeconds;
}

TimelineBlock::Kind blockKindOf(Span::Kind kind) {
  switch (kind) {
    case Span::kForward:
      return TimelineBlock::kForward;
    case Span::kBackward:
      return TimelineBlock::kBackward;
    case Span::kWeight:
      return TimelineBlock::kWeight;
  }
  return TimelineBlock::kForward;
}

}  // namespace

Expected<std::vector<std::vector<TimelineBlock>>> stepTimeline(const cost::CostReport& report,
                                                               const PipelineShape& config) {
  const auto stages = static_cast<size_t>(config.stages);
  if (report.stages.size() != stages * config.virtualStages) {
    return Error{fmt::format("stepTimeline: {} stage costs for {} stages x {} chunks",
                             report.stages.size(), config.stages, config.virtualStages)};
  }
  SimulationInput input = simulationInput(report, config);
  input.recordSpans = true;
  auto simulated = simulate(input);
  if (!simulated) return simulated.error();
  std::vector<std::vector<TimelineBlock>> timeline(stages);
  for (size_t s = 0; s < stages; ++s) {
    StageEstimate tail;
    for (const Span& span : simulated->stages[s].spans) {
      const cost::StageCost& cost = report.stages[span.chunk * stages + s];
      const double seconds = span.endSeconds - span.startSeconds;
      const double compute = span.kind == Span::kForward
                                 ? cost.forwardComputeSeconds
                                 : cost.backwardComputeSeconds + cost.recomputeComputeSeconds;
      // A W is the weight-gradient matmuls alone; a zero-bubble B is the rest of the backward,
      // its communication included.
      const double communication =
          span.kind == Span::kWeight ? 0 : std::clamp(seconds - compute, 0.0, seconds);
      timeline[s].push_back(TimelineBlock{blockKindOf(span.kind), span.microBatch, span.chunk,
                                          span.startSeconds, span.endSeconds, communication});
    }
    for (size_t k = s; k < report.stages.size(); k += stages) addStatic(tail, report.stages[k]);
    double at = simulated->stages[s].finishSeconds;
    for (const auto& [kind, seconds] :
         {std::pair{TimelineBlock::kGradientSync, tail.exposedGradientSyncSeconds},
          std::pair{TimelineBlock::kOptimizer, tail.optimizerSeconds},
          std::pair{TimelineBlock::kParameterGather, tail.exposedParameterGatherSeconds}}) {
      if (seconds <= 0) continue;
      const double communication = kind == TimelineBlock::kOptimizer ? 0 : seconds;
      timeline[s].push_back(TimelineBlock{kind, 0, 0, at, at + seconds, communication});
      at += seconds;
    }
  }
  return timeline;
}

Expected<StepEstimate> estimateStep(const cost::CostReport& report, const PipelineShape& config) {
  const size_t expected = static_cast<size_t>(config.stages) * config.virtualStages;
  if (report.stages.size() != expected) {
    return Error{fmt::format("estimateStep: {} stage costs for {} stages x {} chunks",
                             report.stages.size(), config.stages, config.virtualStages)};
  }
  auto simulated = simulate(simulationInput(report, config));
  if (!simulated) return simulated.error();
  StepEstimate estimate;
  estimate.stages.resize(static_cast<size_t>(config.stages));
  for (size_t k = 0; k < report.stages.size(); ++k) {
    addStatic(estimate.stages[k % static_cast<size_t>(config.stages)], report.stages[k]);
  }
  // The step ends with the slowest stage's exposed gradient sync, optimizer step and exposed
  // parameter all-gather (its tail).
  size_t slowestTail = 0;
  auto tailOf = [&](size_t s) {
    const StageEstimate& stage = estimate.stages[s];
    return stage.exposedGradientSyncSeconds + stage.optimizerSeconds +
           stage.exposedParameterGatherSeconds;
  };
  size_t busiest = 0;
  for (size_t s = 0; s < estimate.stages.size(); ++s) {
    StageEstimate& stage = estimate.stages[s];
    const StageResult& result = simulated->stages[s];
    stage.busySeconds = result.busySeconds;
    stage.peakInFlight = result.peakInFlight;
    stage.memory.activationBytes = result.peakActivationBytes;
    stage.memory.keptOutputBytes = result.peakKeptOutputBytes;
    if (tailOf(s) > tailOf(slowestTail)) slowestTail = s;
    if (stage.busySeconds > estimate.stages[busiest].busySeconds) busiest = s;
    if (stage.memory.total() > estimate.peakMemory().total())
      estimate.peakStage = static_cast<int>(s);
  }
  double compute = 0;
  for (size_t k = busiest; k < report.stages.size(); k += static_cast<size_t>(config.stages)) {
    const cost::StageCost& cost = report.stages[k];
    compute +=
        cost.forwardComputeSeconds + cost.backwardComputeSeconds + cost.recomputeComputeSeconds;
  }
  const double gradientSync = estimate.stages[slowestTail].exposedGradientSyncSeconds +
                              estimate.stages[slowestTail].exposedParameterGatherSeconds;
  estimate.optimizerSeconds = estimate.stages[slowestTail].optimizerSeconds;
  estimate.computeSeconds = compute * config.microBatches;
  estimate.bubbleSeconds = simulated->bubbleSeconds;
  estimate.bubbleFraction = simulated->bubbleFraction;
  estimate.exposedCommunicationSeconds =
      simulated->idealSeconds - estimate.computeSeconds + gradientSync;
  estimate.stepSeconds = simulated->makespanSeconds + tailOf(slowestTail);
  return estimate;
}

}  // namespace autopar::sim
