/// `autopar run` and `autopar check`: run a plan on real ranks (LibTorch + Gloo), and compare it
/// with the unsharded model (docs/runtime.md). Part of autopar-runtime, built only when LibTorch
/// is found.

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cmath>
#include <csignal>
#include <numeric>

#include "cli/verbs.h"
#include "plan/plan_json.h"
#include "planner/runnable_plan.h"
#include "runtime/equivalence.h"
#include "runtime/executor.h"
#include "runtime/launcher.h"
#include "runtime/result_file.h"
#include "util/limits.h"

namespace autopar::cli {

namespace {

constexpr int kExitFailed = 1;
constexpr double kTolerance = 1e-5;

struct RunOptions {
  std::string planPath;
  int ranks = 0;  ///< 0: join a job from RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
  runtime::RunConfig config;
  std::string address = "127.0.0.1";
  std::string resultDir;  ///< internal: where launched ranks leave their results for `check`
  /// internal (`autopar profile`): run a graph file's annotated sharding instead of a plan.
  std::string graphPath;
  std::string cluster = "cpu-host";
  /// How long a rank waits for a peer, and the launcher for a stopped rank.
  double timeoutSeconds = 60;
};

std::chrono::milliseconds timeoutOf(const RunOptions& options) {
  return std::chrono::milliseconds(static_cast<int64_t>(options.timeoutSeconds * 1e3));
}

runtime::LaunchOptions launchOptions(const RunOptions& options,
                                     std::vector<std::string> arguments) {
  runtime::LaunchOptions launch;
  launch.ranks = options.ranks;
  launch.address = options.address;
  launch.arguments = std::move(arguments);
  launch.timeout = timeoutOf(options);
  return launch;
}

/// A rank of a job: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT say where it stands.
int runRank(const RunOptions& options) {
  auto connection = runtime::connectionFromEnvironment(options.address);
  if (!connection) return reportError(connection.error());
  connection->timeout = timeoutOf(options);
  const int rank = connection->rank;
  const int world = connection->world;
  auto loaded = options.graphPath.empty()
                    ? planner::loadRunnablePlan(options.planPath)
                    : planner::loadRunnableGraph(options.graphPath, options.cluster, world);
  if (!loaded) return reportError(loaded.error());
  if (loaded->plan.devices != world) {
    return reportError(
        Error{fmt::format("{}: devices: the plan is for {} devices but WORLD_SIZE is {}",
                          options.planPath, loaded->plan.devices, world)});
  }
  runtime::RunConfig config = options.config;
  runtime::applyFaultInjection(rank, config);
  runtime::Program program{loaded->graph,
                           loaded->sharding,
                           loaded->cluster,
                           loaded->plan.parameters,
                           loaded->opStage,
                           loaded->stages,
                           loaded->plan.pipeline.microBatches,
                           loaded->opChunk,
                           loaded->batchShares};
  const int64_t graphBatch =
      std::accumulate(loaded->batchShares.begin(), loaded->batchShares.end(), int64_t{0});
  auto result =
      runtime::execute(program, *connection, config, [&](const runtime::StepReport& step) {
        if (step.step == 0 && graphBatch > 0 && step.samples > 0) {
          fmt::print(
              "rank {} trains {} of the {} samples of each micro-batch (uneven "
              "data-parallel shares)\n",
              rank, step.samples, graphBatch);
        }
        fmt::print("rank {} step {} loss {:.6f} time {:.1f} ms\n", rank, step.step, step.loss,
                   step.seconds * 1e3);
        std::fflush(stdout);
      });
  if (!result) {
    fmt::print(stderr, "autopar: error: {}\n", result.error().message);
    return kExitFailed;
  }
  if (!options.resultDir.empty()) {
    const std::string path = fmt::format("{}/rank-{}.pt", options.resultDir, rank);
    if (auto status = runtime::writeResult(*result, path); !status) {
      fmt::print(stderr, "autopar: error: {}\n", status.error().message);
      return kExitFailed;
    }
  }
  return kExitOk;
}

std::vector<std::string> rankArguments(const RunOptions& options) {
  std::vector<std::string> args{"run",
                                "--plan",
                                options.planPath,
                                "--steps",
                                std::to_string(options.config.steps),
                                "--seed",
                                std::to_string(options.config.seed),
                                "--lr",
                                fmt::format("{}", options.config.learningRate),
                                "--adam-eps",
                                fmt::format("{}", options.config.adamEpsilon),
                                "--address",
                                options.address,
                                "--timeout",
                                fmt::format("{}", options.timeoutSeconds)};
  if (options.config.sgd) args.push_back("--sgd");
  return args;
}

Status checkRanks(const plan::Plan& plan, int ranks, const std::string& path) {
  if (plan.devices != ranks) {
    return Error{fmt::format("{}: devices: the plan is for {} devices but --ranks is {}", path,
                             plan.devices, ranks)};
  }
  return {};
}

int launchRanks(const RunOptions& options) {
  auto loaded = planner::loadRunnablePlan(options.planPath);
  if (!loaded) return reportError(loaded.error());
  if (auto status = checkRanks(loaded->plan, options.ranks, options.planPath); !status) {
    return reportError(status.error());
  }
  if (auto status = runtime::checkAddress(options.address); !status) {
    return reportError(status.error());
  }
  if (auto status = runtime::launch(launchOptions(options, rankArguments(options))); !status) {
    fmt::print(stderr, "autopar: error: {}\n", status.error().message);
    return kExitFailed;
  }
  fmt::print("autopar run: {} ranks finished {} steps\n", options.ranks, options.config.steps);
  return kExitOk;
}

/// While `check` runs the unsharded model in this process, a signal that ends it (SIGINT,
/// SIGTERM, SIGHUP) prints one line first; its status stays the signal's. Only write(2) and
/// raise(3) run in the handler (async-signal-safe). The launcher's own handling takes over for
/// the ranks.
extern "C" void stopWithMessage(int signal) {
  constexpr char kMessage[] =
      "autopar: error: check: stopped by a signal during the unsharded run\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

class StopMessage {
 public:
  StopMessage() {
    for (size_t i = 0; i < kSignals.size(); ++i)
      previous_[i] = std::signal(kSignals[i], stopWithMessage);
  }
  ~StopMessage() {
    for (size_t i = 0; i < kSignals.size(); ++i) std::signal(kSignals[i], previous_[i]);
  }
  StopMessage(const StopMessage&) = delete;
  StopMessage& operator=(const StopMessage&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
  std::array<void (*)(int), 3> previous_{};
};

int runCheck(const RunOptions& options) {
  auto loaded = planner::loadRunnablePlan(options.planPath);
  if (!loaded) return reportError(loaded.error());
  if (auto status = checkRanks(loaded->plan, options.ranks, options.planPath); !status) {
    return reportError(status.error());
  }
  if (auto status = runtime::checkAddress(options.address); !status) {
    return reportError(status.error());
  }
  auto unsharded = runtime::unshardedSharding(loaded->graph);
  if (!unsharded) return reportError(unsharded.error());
  runtime::Program serial{loaded->graph,
                          *unsharded,
                          loaded->cluster,
                          {},
                          {},
                          1,
                          loaded->plan.pipeline.microBatches,
                          {},
                          {}};
  auto reference = [&] {
    const StopMessage stop;
    return runtime::execute(serial, {}, options.config, [](const runtime::StepReport& s) {
      fmt::print("unsharded step {} loss {:.6f} time {:.1f} ms\n", s.step, s.loss, s.seconds * 1e3);
    });
  }();
  if (!reference) return reportError(reference.error());

  auto results =
      runtime::launchAndCollect(launchOptions(options, rankArguments(options)), options.ranks);
  if (!results) {
    fmt::print(stderr, "autopar: error: {}\n", results.error().message);
    return kExitFailed;
  }
  const runtime::Difference loss = runtime::lossDifference(*reference, *results);
  const runtime::Difference parameters = runtime::parameterDifference(*reference, *results);
  const bool pass = loss.value <= kTolerance && parameters.value <= kTolerance;
  fmt::print("check: {} on {} ranks, {} steps against the unsharded model\n", options.planPath,
             options.ranks, options.config.steps);
  // The ranks above printed their losses: after step 0 they differ from `autopar run`'s when the
  // optimizers differ, which the user would otherwise take for a fault of one of the two.
  const runtime::RunConfig runDefaults;
  if (!options.config.sgd && options.config.adamEpsilon != runDefaults.adamEpsilon) {
    fmt::print(
        "  Adam epsilon {:g} (`autopar run` uses {:g}: its losses after step 0 match these with "
        "--adam-eps {:g})\n",
        options.config.adamEpsilon, runDefaults.adamEpsilon, options.config.adamEpsilon);
  }
  fmt::print("  loss        max relative difference {:.3g} ({})\n", loss.value, loss.where);
  fmt::print("  parameters  max relative difference {:.3g} ({})\n", parameters.value,
             parameters.where);
  fmt::print("{} (tolerance {:g})\n", pass ? "PASS" : "FAIL", kTolerance);
  return pass ? kExitOk : kExitFailed;
}

void addCommonOptions(CLI::App* verb, RunOptions& options) {
  verb->add_option("--plan", options.planPath, "plan JSON written by autopar plan --out");
  verb->add_option("--steps", options.config.steps, "training steps")
      ->check(positiveAtMost(1'000'000));
  // A seed up to 2^53, every integer a double holds exactly (finiteIn reads it as a double).
  verb->add_option("--seed", options.config.seed, "seed of the synthetic data and parameters")
      ->check(finiteIn(0, 9007199254740992.0));
  // A learning rate past 10 or an epsilon past 1 trains nothing a user means: refused, not run.
  verb->add_option("--lr", options.config.learningRate, "Adam's learning rate")
      ->check(positive())
      ->check(finiteIn(0, 10));
  verb->add_flag("--sgd", options.config.sgd, "plain SGD instead of Adam");
  verb->add_option("--adam-eps", options.config.adamEpsilon, "Adam's epsilon")
      ->check(positive())
      ->check(finiteIn(0, 1));
  verb->add_option("--address", options.address,
                   "address the ranks' Gloo connections bind to (default loopback)");
  verb->add_option("--timeout", options.timeoutSeconds,
                   "seconds a rank waits for a peer, and the launcher for a stopped rank, before "
                   "the run fails naming it")
      ->check(positiveAtMost(86400));
}

}  // namespace

void addRunVerbs(CLI::App& app, Action& action) {
  auto run = std::make_shared<RunOptions>();
  CLI::App* runVerb = app.add_subcommand(
      "run",
      "Run a plan's training steps on N local ranks (or join a job from RANK, WORLD_SIZE, "
      "MASTER_ADDR, MASTER_PORT)");
  addCommonOptions(runVerb, *run);
  runVerb->add_option("--ranks", run->ranks, "start this many local ranks")
      ->check(positiveAtMost(limits::kMaxDevicesPerNode));
  runVerb->add_option("--result-dir", run->resultDir, "internal: where ranks leave their results")
      ->group("");
  runVerb->add_option("--graph", run->graphPath, "internal: a graph file to run")->group("");
  runVerb->add_option("--cluster", run->cluster, "internal: with --graph")->group("");
  runVerb->add_flag("--measure", run->config.measure, "internal: time passes, count bytes")
      ->group("");
  runVerb->callback([&action, run] {
    action = [run] {
      if (run->planPath.empty() && run->graphPath.empty()) {
        return reportError(Error{"run: --plan is required"});
      }
      return run->ranks > 0 ? launchRanks(*run) : runRank(*run);
    };
  });

  auto check = std::make_shared<RunOptions>();
  // At Adam's usual 1e-8 the first updates are nearly lr * sign(g): a gradient near zero flips
  // with fp32 rounding and the parameters differ by up to lr, whatever the plan. At 1e-3 the
  // update is a smooth function of the gradient, so the comparison measures the plan.
  check->config.adamEpsilon = 1e-3;
  CLI::App* checkVerb = app.add_subcommand(
      "check",
      "Run a plan sharded on N ranks and unsharded in one process, in fp32, and compare "
      "the losses and the final parameters (fails above 1e-5 relative)");
  addCommonOptions(checkVerb, *check);
  checkVerb->add_option("--ranks", check->ranks, "ranks to run the plan on")
      ->required()
      ->check(positive());
  checkVerb->callback([&action, check] {
    action = [check] {
      if (check->planPath.empty()) return reportError(Error{"check: --plan is required"});
      return runCheck(*check);
    };
  });
}

}  // namespace autopar::cli
