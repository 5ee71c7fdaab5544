#pragma once
/// \file
/// One pipeline stage's time and memory in a training step: the record the cost model fills per
/// virtual stage (cost::StageCost holds its memory), the step model sums per stage
/// (sim::estimateStep), and the plan records (plan::StageRecord) and writes. Declared once here,
/// below all three, so a field added to it reaches every one of them.
///   A stage of 8 layers at TP 8 under 1F1B with 4 micro-batches in flight: forwardSeconds 0.041,
///   backwardSeconds 0.083, peakInFlight 4, memory.activationBytes = 4 x one micro-batch's.

#include <cstdint>

namespace autopar::ir {

/// A device's memory, by what holds it.
struct MemoryBreakdown {
  int64_t parameterBytes = 0;
  int64_t gradientBytes = 0;
  int64_t optimizerBytes = 0;
  int64_t activationBytes = 0;
  /// Of activationBytes, the stage outputs the pipeline runtime keeps to the end of the step
  /// (CodePath::pipelineKeepsOutputs), at the stage's peak.
  int64_t keptOutputBytes = 0;
  /// The largest transient buffer a collective needs, plus the optimizer-parallel parameter
  /// copies kept gathered from forward to backward.
  int64_t communicationBytes = 0;
  /// Of communicationBytes, the transient collective buffer: one slot that every collective of
  /// the stage reuses, so a stage running several chunks (interleaved pipelining) holds the
  /// largest chunk's, not their sum.
  int64_t communicationSlotBytes = 0;
  /// The largest working set the backward pass adds to what is kept: the cross entropy's
  /// gradient buffers, or a recomputed region's activations made again (cost/graph_cost.h).
  int64_t workspaceBytes = 0;
  int64_t hostBytes = 0;  ///< kept in host memory (not counted in total())
  /// What the process holds beyond its tensors: the CUDA context, NCCL's buffers and the caching
  /// allocator's reserve (planner::runtimeReserveBytes; 0 where the plan does not model them).
  int64_t runtimeBytes = 0;
  [[nodiscard]] int64_t total() const {
    return parameterBytes + gradientBytes + optimizerBytes + activationBytes + communicationBytes +
           workspaceBytes + runtimeBytes;
  }
};

/// One pipeline stage (the whole device group without pipelining) over one step.
struct StageEstimate {
  double forwardSeconds = 0;   ///< one micro-batch, all chunks of the stage
  double backwardSeconds = 0;  ///< one micro-batch, recompute included
  double busySeconds = 0;      ///< the whole step's forward and backward work
  double sendSeconds = 0;      ///< one micro-batch to the next stage
  int peakInFlight = 0;        ///< micro-batches (chunk-micro-batches when interleaved)
  double exposedGradientSyncSeconds = 0;
  double exposedParameterGatherSeconds = 0;  ///< group update's updated parameters
  double optimizerSeconds = 0;
  MemoryBreakdown memory;  ///< activations at the schedule's peak
  /// Optimizer parallel: state bytes saved per device against whole parameters, and the seconds
  /// of its all-gathers (one micro-batch) and gradient reduce-scatters (one step).
  int64_t optimizerParallelSavedBytes = 0;
  double optimizerParallelCommSeconds = 0;
};

}  // namespace autopar::ir
