#pragma once
/// \file
/// `autopar calibrate`: re-fits the cost model's free constants on a user's own measured runs,
/// so that later estimates and searches price the user's cluster and framework as they ran
/// (`--cost-model` takes the result). Each run is a configuration `autopar estimate` takes, with
/// its measured step time, peak memory or both. The fit moves only the constants asked for,
/// one at a time (a golden-section search of each within a factor of four of its value, sweeps
/// until none moves), minimising the mean absolute percentage error over the measurements the
/// constant prices (step times for the compute constants, peaks for the runtime's reserve).
/// It refuses, in one line, constants no run depends on and more constants than the runs have
/// distinct configurations. A run's device picks the constants it is priced with
/// (cost::CostConstants::forDevice): the fit moves those, the device's overrides where it has
/// some.
///   5 runs of llama2-7b TP 2 DP 4 measured 18% slower than predicted, --fit matmul_efficiency:
///   matmul_efficiency 0.83 -> 0.70, step-time error 18.4% -> 0.0%, leave-one-out 0.0%

#include <cstdint>
#include <string>
#include <vector>

#include "cost/constants.h"
#include "planner/configuration/estimate_request.h"
#include "util/expected.h"

namespace autopar::planner {

/// One measured run.
struct MeasuredRun {
  std::string label;  ///< where it came from, for messages ("runs.jsonl:3")
  /// The configuration as given (its estimate arguments): runs with the same one repeat it.
  std::string configuration;
  EstimateRequest request;
  double stepSeconds = 0;  ///< 0: not measured
  int64_t peakBytes = 0;   ///< 0: not measured
};

struct CalibratedConstant {
  std::string key;  ///< cost::ConstantField::key
  double before = 0;
  double after = 0;
};

/// A run's measurement beside its prediction before and after the fit, and predicted by the
/// fit of the other runs (leave-one-out).
struct CalibratedRun {
  std::string label;
  bool memory = false;  ///< a peak (bytes), else a step time (seconds)
  double measured = 0;
  double before = 0;
  double after = 0;
  double leftOut = 0;
};

struct Calibration {
  cost::CostConstants constants;
  std::vector<CalibratedConstant> fitted;
  std::vector<CalibratedRun> runs;  ///< one per measurement
  /// Mean absolute percentage errors over every measurement.
  double errorBefore = 0;
  double errorAfter = 0;
  double leaveOneOutError = 0;  ///< 0 with a single run
};

/// Fits `keys` (cost::ConstantField keys) on `runs`, starting from `base`.
Expected<Calibration> calibrate(const std::vector<MeasuredRun>& runs, const cost::CostModel& base,
                                const std::vector<std::string>& keys);

}  // namespace autopar::planner
