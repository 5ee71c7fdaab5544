#pragma once
/// \file
/// What the intra-operator searches share (internal to the solvers): a search's outcome and when
/// it must stop.

#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "ir/intra_op_problem.h"
#include "search/intra_op/intra_op_solver.h"

namespace autopar::search::local {

using Clock = std::chrono::steady_clock;

struct Outcome {
  bool feasible = false;
  int64_t cost = ir::kInfiniteCost;
  std::vector<int> choice;
  /// A proven lower bound on the optimum (the Lagrangian search's); -infinity when none.
  double lowerBound = -std::numeric_limits<double>::infinity();
};

/// When a search stops: the deadline, the iteration budget or the caller's stop flag.
class Budget {
 public:
  Budget(const SolveOptions& options, Clock::time_point deadline)
      : options_(options), deadline_(deadline) {}
  [[nodiscard]] bool spent() const {
    return (options_.iterations > 0 && moves >= options_.iterations) || Clock::now() >= deadline_ ||
           (options_.stop && *options_.stop);
  }
  /// Steps taken so far: the hard search's improving moves, the Lagrangian search's rounds.
  int64_t moves = 0;

 private:
  const SolveOptions& options_;
  Clock::time_point deadline_;
};

}  // namespace autopar::search::local
