#pragma once
/// \file
/// Starts the ranks of a run as local processes on loopback and watches them. The launcher hosts
/// the rendezvous store on a port the OS picks, and gives each rank the usual environment (RANK,
/// WORLD_SIZE, MASTER_ADDR, MASTER_PORT; AUTOPAR_STORE=external says the store is not rank 0's).
/// When a rank dies, the others are stopped (SIGTERM, then SIGKILL after a grace period) and the
/// error names the lost rank.

#include <chrono>
#include <string>
#include <vector>

#include "runtime/executor.h"
#include "util/expected.h"

namespace autopar::runtime {

struct LaunchOptions {
  int ranks = 1;
  std::string address = "127.0.0.1";
  /// The arguments each rank runs this executable with (argv[1..]).
  std::vector<std::string> arguments;
  /// Extra environment entries, NAME=VALUE.
  std::vector<std::string> environment;
  std::chrono::milliseconds grace{5000};
};

/// Runs the ranks to completion. Fails with "rank 1 was killed by signal 9 (Killed)" or "rank 2
/// exited with status 1" for the first rank that fails.
Status launch(const LaunchOptions& options);

/// Runs the ranks with `--result-dir DIR` appended to their arguments, DIR a fresh temporary
/// directory, and reads the result file each of ranks 0 .. `collect` - 1 leaves there; the
/// directory is removed whatever happens.
Expected<std::vector<RankResult>> launchAndCollect(LaunchOptions options, int collect);

/// A rank of a job as its launcher (autopar's, torchrun's) describes it in the environment:
/// RANK, WORLD_SIZE, MASTER_PORT (integers) and MASTER_ADDR (default `defaultAddress`); rank 0
/// hosts the store unless AUTOPAR_STORE=external. Fails with one line naming what is missing.
Expected<Connection> connectionFromEnvironment(const std::string& defaultAddress);

/// Test hooks for fault handling, from AUTOPAR_FAULT: "RANK:STEP" makes that rank kill itself
/// mid-step (RunConfig::dieAtStep), "drop-gradient-sums" lowers the plan without its gradient
/// all-reduces (RunConfig::dropGradientSums). Without the variable, `config` is unchanged.
void applyFaultInjection(int rank, RunConfig& config);

}  // namespace autopar::runtime
