#pragma once
/// \file
/// Starts the ranks of a run as local processes and watches them, and lets a rank join a job
/// from its environment.
///
/// The launcher:
///   - rendezvous: a FileStore in a fresh temporary directory, so nothing listens on a port;
///     Gloo binds to the address given (loopback by default). Each rank gets RANK, WORLD_SIZE,
///     MASTER_ADDR, AUTOPAR_STORE=file:PATH and AUTOPAR_LAUNCHER_PID.
///   - a rank that dies: the others are stopped (SIGTERM, then SIGKILL after a grace period) and
///     the error names the lost rank.
///   - a rank that is stopped (SIGSTOP, SIGTSTP): if it stays stopped for the timeout, or another
///     rank fails meanwhile (its collectives time out after the same timeout), the job ends and
///     the error names the stopped rank.
///   - SIGINT, SIGTERM or SIGHUP to the launcher: forwarded to the ranks, then SIGKILL after the
///     grace period; the temporary directory is removed and the error names the signal.
///   - the launcher killed outright (SIGKILL): each rank asked the kernel for SIGKILL when its
///     parent dies (PR_SET_PDEATHSIG), so none outlives it; only the store's directory remains.

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
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
  /// How long a rank may stay stopped before the job ends (the ranks' own collectives wait the
  /// same: `run --timeout`).
  std::chrono::milliseconds timeout{60000};
};

/// Whether `address` can host this machine's ranks: a numeric address or a host name that
/// resolves, and one of this machine's (Gloo binds to it). One line naming it otherwise.
Status checkAddress(const std::string& address);

/// The store a rank joins: the launcher's file store or the TCP store at address:port.
c10::intrusive_ptr<c10d::Store> connectStore(const Connection& connection);

/// Runs the ranks to completion. Fails with "rank 1 was killed by signal 9 (Killed)" or "rank 2
/// exited with status 1" for the first rank that fails.
Status launch(const LaunchOptions& options);

/// Runs the ranks with `--result-dir DIR` appended to their arguments, DIR a fresh temporary
/// directory, and reads the result file each of ranks 0 .. `collect` - 1 leaves there; the
/// directory is removed whatever happens.
Expected<std::vector<RankResult>> launchAndCollect(LaunchOptions options, int collect);

/// A rank of a job as its launcher (autopar's, torchrun's) describes it in the environment:
/// RANK (0 .. WORLD_SIZE - 1), WORLD_SIZE (1 .. 2^20), MASTER_ADDR (default `defaultAddress`;
/// it must resolve) and MASTER_PORT (1 .. 65535; not read under autopar's launcher, whose
/// AUTOPAR_STORE=file:PATH names its file store); rank 0 hosts the TCP store unless
/// AUTOPAR_STORE=external. Under autopar's launcher (AUTOPAR_LAUNCHER_PID) the rank also asks to
/// be killed when the launcher dies. Fails with one line naming the variable, its value and what
/// was expected.
Expected<Connection> connectionFromEnvironment(const std::string& defaultAddress);

/// Test hooks for fault handling, from AUTOPAR_FAULT: "RANK:STEP" makes that rank kill itself
/// mid-step (RunConfig::dieAtStep), "drop-gradient-sums" lowers the plan without its gradient
/// all-reduces (RunConfig::dropGradientSums). Without the variable, `config` is unchanged.
void applyFaultInjection(int rank, RunConfig& config);

}  // namespace autopar::runtime
