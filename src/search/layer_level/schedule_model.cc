#include "search/layer_level/schedule_model.h"

#include <algorithm>

namespace autopar::search {

namespace {

/// Runs stage `stage`'s forwards and backwards as held-count changes, add(chunk, delta), and
/// calls visit() at each moment the stage can peak (schedule_model.h).
template <typename Add, typename Visit>
void scanPeaks(ir::Schedule schedule, int64_t stages, int64_t virtualStages, int64_t microBatches,
               int64_t stage, Add add, Visit visit) {
  if (chunksOf(schedule, virtualStages) == 1) {
    // GPipe runs every forward before any backward: all the micro-batches are held.
    const int64_t held = schedule == ir::Schedule::kGPipe ? microBatches
                         : schedule == ir::Schedule::kZeroBubbleH1
                             ? std::min(stages, microBatches)
                             : std::min(stages - stage, microBatches);
    add(0, held);
    visit();
    return;
  }
  const int64_t period = stages * virtualStages;
  const int64_t steps = microBatches * virtualStages;
  const int64_t warmup = std::min(2 * (stages - stage - 1) + (virtualStages - 1) * stages, steps);
  const auto forwardChunk = [&](int64_t step) { return step % period / stages; };
  const auto backwardChunk = [&](int64_t step) {
    return virtualStages - 1 - step % period / stages;
  };
  // The warmup's forwards: whole periods of P per chunk, then the partial period's chunks.
  for (int64_t chunk = 0; chunk < virtualStages; ++chunk) {
    const int64_t partial = std::clamp<int64_t>(warmup % period - chunk * stages, 0, stages);
    add(chunk, warmup / period * stages + partial);
  }
  if (warmup == steps) {
    visit();
    return;
  }
  for (int64_t j = 0; j < std::min(period, steps - warmup); ++j) {
    add(forwardChunk(warmup + j), 1);
    visit();
    add(backwardChunk(j), -1);
  }
}

/// True when `a` is at most `b` in every entry.
bool covered(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  for (size_t c = 0; c < a.size(); ++c) {
    if (a[c] > b[c]) return false;
  }
  return true;
}

}  // namespace

double fillSeconds(ir::Schedule schedule, int64_t chunks, double stageSeconds,
                   double weightSeconds) {
  switch (schedule) {
    case ir::Schedule::kGPipe:  // the same fill and drain as 1F1B (Narayanan et al. 2021)
    case ir::Schedule::k1F1B:
      return stageSeconds;
    case ir::Schedule::kInterleaved:
      return stageSeconds / static_cast<double>(std::max<int64_t>(chunks, 1));
    case ir::Schedule::kZeroBubbleH1:
      return std::max(stageSeconds - 2 * weightSeconds, 0.0);
  }
  return stageSeconds;
}

PipelineClock::PipelineClock(ir::Schedule schedule, int64_t chunks, int64_t microBatches,
                             int64_t stages, double sendSeconds)
    : schedule_(schedule),
      chunks_(chunks),
      microBatches_(microBatches),
      sends_(2 * static_cast<double>(stages - 1) * sendSeconds) {}

void PipelineClock::addStage(double stageSeconds, double weightSeconds) {
  const double fill = fillSeconds(schedule_, chunks_, stageSeconds, weightSeconds);
  fill_ += fill;
  slowest_ = std::max(slowest_, stageSeconds);
  largestFill_ = std::max(largestFill_, fill);
}

double PipelineClock::seconds() const {
  if (slowest_ < 0) return 0;
  return static_cast<double>(microBatches_) * slowest_ + (fill_ - largestFill_) + sends_;
}

int64_t chunksOf(ir::Schedule schedule, int64_t virtualStages) {
  return schedule == ir::Schedule::kInterleaved ? std::max<int64_t>(virtualStages, 1) : 1;
}

std::vector<std::vector<int64_t>> peakRows(ir::Schedule schedule, int64_t stages,
                                           int64_t virtualStages, int64_t microBatches,
                                           int64_t stage) {
  std::vector<int64_t> held(static_cast<size_t>(chunksOf(schedule, virtualStages)), 0);
  std::vector<std::vector<int64_t>> rows;
  scanPeaks(
      schedule, stages, virtualStages, microBatches, stage,
      [&](int64_t chunk, int64_t delta) { held[static_cast<size_t>(chunk)] += delta; },
      [&] { rows.push_back(held); });
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  std::vector<std::vector<int64_t>> kept;
  for (size_t i = 0; i < rows.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < rows.size() && !dominated; ++j) {
      dominated = j != i && covered(rows[i], rows[j]);
    }
    if (!dominated) kept.push_back(rows[i]);
  }
  return kept;
}

double peakActivationBytes(ir::Schedule schedule, int64_t stages, int64_t virtualStages,
                           int64_t microBatches, int64_t stage, const double* chunkBytes) {
  double bytes = 0;
  double peak = 0;
  scanPeaks(
      schedule, stages, virtualStages, microBatches, stage,
      [&](int64_t chunk, int64_t delta) {
        bytes += static_cast<double>(delta) * chunkBytes[chunk];
      },
      [&] { peak = std::max(peak, bytes); });
  return peak;
}

}  // namespace autopar::search
