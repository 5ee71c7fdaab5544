#pragma once
/// \file
/// The figures a training framework prints every few steps, read from its log lines: what a
/// user has at hand after a run, for `autopar calibrate` to fit on.
///   Megatron-LM (megatron/training/training.py, training_log and report_memory):
///     " [2026-01-01 10:00:00] iteration      100/    1000 | ... | elapsed time per iteration
///      (ms): 1423.5 | ..."                                   -> stepSeconds 1.4235
///     "[Rank 0] (after 100 iterations) memory (MB) | allocated: ... | max allocated: 60211.3 |
///      reserved: ... | max reserved: 62000.0"               -> peakGib 62000 / 1024
///   torchtitan (its metrics logger; colour codes allowed):
///     "step: 10  loss:  7.1234  memory: 31.02GiB(39.23%)  tps: 5,762  tflops: 333.60  mfu: 33.73%"
///                                                            -> peakGib 31.02, tokens/s 5762
/// The last line of each kind wins (a log's later steps are past the warm-up).

#include <string>
#include <vector>

#include "util/expected.h"

namespace autopar::frontend {

struct TrainingLogFigures {
  double stepSeconds = 0;               ///< 0: no iteration line
  double peakGib = 0;                   ///< 0: no memory figure
  double tokensPerSecondPerDevice = 0;  ///< torchtitan's tps; 0: none
};

/// The figures of these log lines; an error when no line is one autopar reads, or a figure is
/// out of range (a step over 1e6 s, a peak over 1e5 GiB, over 1e9 tokens/s).
Expected<TrainingLogFigures> readTrainingLog(const std::vector<std::string>& lines);

}  // namespace autopar::frontend
