#pragma once
/// \file
/// What the hybrid search's closed form (search/layer_level/analytic_step.h) and its layer
/// placement (search/layer_level/layer_placement.h) take from a pipeline schedule, in one place so
/// that the two agree to the last bit: the step from each stage's time, and how many micro-batches
/// of each model chunk a stage holds where its activations can peak.
///
/// Step. P stages, V chunks per stage, m micro-batches; stage s takes T_s (forward and backward
/// of one micro-batch over all its chunks, recompute included), W_s of it weight gradients:
///   step = m max_s T_s + (sum_s fill_s - max_s fill_s) + 2 (P - 1) t_send
///   fill_s = T_s                  1F1B (PipeDream-Flush: the fill and drain pass every stage but
///                                 the slowest)
///            T_s / V              interleaved (Narayanan et al. 2021: the bubble shrinks V-fold)
///            max(T_s - 2 W_s, 0)  zero-bubble H1 (Qi et al. 2023: the fill and drain pass only
///                                 the input-gradient part of each backward; with even stages this
///                                 is their m (F + B + W) + (P - 1)(F + B - W))
/// Under 1F1B and interleaved the stage left out is the slowest. Under ZB-H1 it is the one with
/// the largest fill, which keeps the step rising with every stage's time (leaving out the slowest
/// stage's T - 2 W instead would reward slowing a stage with a large W down until it is the
/// slowest, so a placement would recompute layers it has room for). On uneven stages the step is
/// within 1.6% of sim/simulator.h on average (tests/integration/schedule_model_test.cc).
/// For a bound B on the slowest stage, step = m B + sum_s fill_s - (the largest fill) + sends,
/// and sum_s fill_s - max_s fill_s = min over stages d of sum_{s != d} fill_s: the placement
/// chooses which stage to leave out.

/// Peaks. A stage holds a micro-batch's activations of a chunk from its forward to its backward
/// (to its W under ZB-H1). Its peak is max over moments of sum_c held_c x bytes_c, and it can only
/// peak right after a forward; peakRows lists the held_c vectors of those moments:
///   1F1B           one row {min(P - s, m)}
///   ZB-H1          one row {min(P, m)} (sim/simulator.h defers a W up to 1F1B's first-stage peak)
///   interleaved    Megatron-LM's order (sim/schedule.h): warmup w = min(2 (P - s - 1) + (V - 1) P,
///                  m V) forwards, then forward w + j and backward j for j = 0, 1, ...; forward
///                  step k runs chunk (k mod P V) / P, backward step k chunk V - 1 - (k mod P V) /
///                  P. After forward w + j the held counts repeat with period P V in j, so one
///                  period gives every row.
/// Example: P = 4, V = 2, m = 8, stage 0 (w = 10): after forward 10 it holds 7 micro-batches of
/// chunk 0 and 4 of chunk 1; backward 0 (chunk 1) and forward 11 (chunk 0) make it 8 and 3. Its
/// rows are {8, 3} and {7, 4}: with chunk 0 heavier, {8, 3} is the peak.

#include <cstdint>
#include <vector>

#include "ir/parallel_config.h"

namespace autopar::search {

/// What a stage adds to the fill and drain (fill_s above). `chunks` is V (read only when
/// interleaved).
double fillSeconds(ir::Schedule schedule, int64_t chunks, double stageSeconds,
                   double weightSeconds);

/// The step of a pipeline from its stages, added in stage order.
class PipelineClock {
 public:
  PipelineClock(ir::Schedule schedule, int64_t chunks, int64_t microBatches, int64_t stages,
                double sendSeconds);
  void addStage(double stageSeconds, double weightSeconds);
  /// m max_s T_s + sum_s fill_s - max_s fill_s + 2 (P - 1) t_send over the stages added.
  [[nodiscard]] double seconds() const;

 private:
  ir::Schedule schedule_;
  int64_t chunks_;
  int64_t microBatches_;
  double sends_;
  double fill_ = 0;
  double slowest_ = -1;
  double largestFill_ = 0;
};

/// The model chunks per stage the schedule runs: V when interleaved, else 1.
int64_t chunksOf(ir::Schedule schedule, int64_t virtualStages);

/// The rows of micro-batches held per chunk (each of size chunksOf(schedule, virtualStages)) at
/// the moments stage `stage` can peak, without repeats and without a row that another row covers
/// entry by entry (so the peak over the rows is the same for any nonnegative bytes per chunk).
std::vector<std::vector<int64_t>> peakRows(ir::Schedule schedule, int64_t stages,
                                           int64_t virtualStages, int64_t microBatches,
                                           int64_t stage);

/// max over the rows of sum_c row[c] x chunkBytes[c], without building the rows (the closed
/// form's inner loop); chunkBytes has one entry per chunk.
double peakActivationBytes(ir::Schedule schedule, int64_t stages, int64_t virtualStages,
                           int64_t microBatches, int64_t stage, const double* chunkBytes);

}  // namespace autopar::search
