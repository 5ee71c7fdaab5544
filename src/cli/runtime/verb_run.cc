/// `autopar run` and `autopar check`: run a plan on real ranks (LibTorch + Gloo), and compare it
/// with the unsharded model (docs/runtime.md). Part of autopar-runtime, built only when LibTorch
/// is found.

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "cli/verbs.h"
#include "frontend/graph_json.h"
#include "plan/plan_json.h"
#include "plan/validate.h"
#include "planner/inputs.h"
#include "runtime/executor.h"
#include "runtime/launcher.h"
#include "runtime/result_file.h"

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
};

/// The plan, its model rebuilt and checked against the plan's fingerprint, and the sharding.
struct LoadedRun {
  plan::Plan plan;
  ir::Graph graph;
  cluster::Cluster cluster;
  rules::GraphSharding sharding;  ///< each op on its pipeline stage's ranks
  std::vector<int> opStage;
  int stages = 1;
  std::vector<int> opChunk;
};

/// Shards every op over its stage's ranks: stage s runs on the plan's ranks (stage 0's) shifted
/// by s times the ranks per stage.
Expected<rules::GraphSharding> stagedSharding(const plan::Plan& plan, const ir::Graph& graph) {
  int stages = 1;
  for (const auto& op : plan.ops) stages = std::max(stages, op.stage + 1);
  std::vector<int> stageRanks = plan.ranks;
  if (stageRanks.empty()) {
    stageRanks.resize(static_cast<size_t>(plan.devices));
    std::iota(stageRanks.begin(), stageRanks.end(), 0);
  }
  if (static_cast<int64_t>(stageRanks.size()) * stages != plan.devices) {
    return Error{
        fmt::format("ranks: {} ranks per stage times {} stages is not the plan's {} "
                    "devices",
                    stageRanks.size(), stages, plan.devices)};
  }
  std::map<std::string, layout::Strategy> strategies;
  for (const auto& op : plan.ops) strategies[op.name] = op.strategy;
  rules::GraphSharding staged;
  for (int stage = 0; stage < stages; ++stage) {
    std::vector<int> ranks = stageRanks;
    for (int& rank : ranks) rank += stage * static_cast<int>(stageRanks.size());
    auto sharding = rules::shardGraph(graph, ranks, strategies);
    if (!sharding) return sharding.error();
    if (stage == 0) {
      staged = std::move(*sharding);
      continue;
    }
    for (size_t op = 0; op < plan.ops.size(); ++op) {
      if (plan.ops[op].stage == stage) staged.ops[op] = sharding->ops[op];
    }
  }
  return staged;
}

/// Rebuilds the graph the plan was made from. The plan records the model, micro-batch and
/// sequence but not the Megatron-style options of `autopar plan --tp/--dp/--sequence-parallel`,
/// so those are tried in turn until the graph's fingerprint matches the plan's.
Expected<ir::Graph> rebuildGraph(const plan::Plan& plan) {
  planner::ModelOptions base;
  base.microBatch = plan.inputs.microBatch;
  base.sequence = plan.inputs.sequence;
  std::vector<planner::ModelOptions> tries{base};
  for (int64_t tp = 1; tp <= plan.devices; ++tp) {
    if (plan.devices % tp != 0) continue;  // (a stage's devices divide the plan's)
    for (bool sequenceParallel : {false, true}) {
      planner::ModelOptions options = base;
      options.tensorParallel = tp;
      options.sequenceParallel = sequenceParallel;
      tries.push_back(options);
    }
  }
  const int64_t devices =
      plan.ranks.empty() ? plan.devices : static_cast<int64_t>(plan.ranks.size());
  std::string firstError;
  for (const planner::ModelOptions& options : tries) {
    // A pipelined plan's graph is one stage's micro-batch: built for one stage's devices.
    auto model = planner::loadModel(plan.inputs.model, options, devices);
    if (!model) {
      if (firstError.empty()) firstError = model.error().message;
      continue;
    }
    if (plan::fingerprint(frontend::graphToJson(model->graph).dump()) == plan.inputs.modelHash) {
      return std::move(model->graph);
    }
  }
  if (!firstError.empty()) return Error{fmt::format("inputs.model: {}", firstError)};
  return Error{
      fmt::format("inputs.model_hash: no build of {} matches the plan's fingerprint {}; "
                  "the model file changed since the plan was made",
                  plan.inputs.model, plan.inputs.modelHash)};
}

Expected<LoadedRun> loadRun(const std::string& path) {
  auto plan = plan::readPlanFile(path);
  if (!plan) return plan.error();
  auto graph = rebuildGraph(*plan);
  if (!graph) return graph.error().in(path);
  if (auto status = plan::validatePlan(*plan, *graph, plan->devices); !status) {
    return status.error().in(path);
  }
  // The cluster only prices redistribution steps here; as many nodes as devices always suffice.
  auto cluster = planner::loadCluster(plan->inputs.cluster, static_cast<int>(plan->devices),
                                      static_cast<int>(plan->devices));
  if (!cluster) return cluster.error().in(path);
  auto sharding = stagedSharding(*plan, *graph);
  if (!sharding) return sharding.error().in(path);
  std::vector<int> opStage;
  std::vector<int> opChunk;
  int stages = 1;
  for (const auto& op : plan->ops) {
    opStage.push_back(op.stage);
    opChunk.push_back(op.chunk);
    stages = std::max(stages, op.stage + 1);
  }
  return LoadedRun{std::move(*plan),     std::move(*graph),  std::move(*cluster),
                   std::move(*sharding), std::move(opStage), stages,
                   std::move(opChunk)};
}

/// A graph file run under its own annotations (semi-auto: unannotated ops data parallel) over
/// `world` ranks, one stage.
Expected<LoadedRun> loadGraphRun(const std::string& path, const std::string& clusterName,
                                 int world) {
  auto model = planner::loadModel(path, {}, world);
  if (!model) return model.error();
  auto cluster = planner::loadCluster(clusterName, world, world);
  if (!cluster) return cluster.error();
  std::vector<int> ranks(static_cast<size_t>(world));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto sharding = rules::shardGraph(model->graph, ranks);
  if (!sharding) return sharding.error().in(path);
  plan::Plan plan;
  plan.devices = world;
  return LoadedRun{std::move(plan),
                   std::move(model->graph),
                   std::move(*cluster),
                   std::move(*sharding),
                   {},
                   1,
                   {}};
}

std::optional<int> environmentInt(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  if (end == value || *end != '\0') return std::nullopt;
  return static_cast<int>(parsed);
}

/// A rank of a job: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT say where it stands.
int runRank(const RunOptions& options) {
  const auto rank = environmentInt("RANK");
  const auto world = environmentInt("WORLD_SIZE");
  const auto port = environmentInt("MASTER_PORT");
  if (!rank || !world || !port) {
    return reportError(
        Error{"run: give --ranks N, or set RANK, WORLD_SIZE, MASTER_ADDR and "
              "MASTER_PORT (integers) to join a job"});
  }
  auto loaded = options.graphPath.empty()
                    ? loadRun(options.planPath)
                    : loadGraphRun(options.graphPath, options.cluster, *world);
  if (!loaded) return reportError(loaded.error());
  if (loaded->plan.devices != *world) {
    return reportError(
        Error{fmt::format("{}: devices: the plan is for {} devices but "
                          "WORLD_SIZE is {}",
                          options.planPath, loaded->plan.devices, *world)});
  }
  runtime::Connection connection;
  connection.rank = *rank;
  connection.world = *world;
  connection.port = *port;
  const char* address = std::getenv("MASTER_ADDR");
  connection.address = address != nullptr ? address : options.address;
  const char* store = std::getenv("AUTOPAR_STORE");
  connection.hostsStore = *rank == 0 && (store == nullptr || std::string(store) != "external");
  runtime::RunConfig config = options.config;
  // Fault-injection hooks for tests: AUTOPAR_FAULT=RANK:STEP kills that rank mid-step;
  // AUTOPAR_FAULT=drop-gradient-sums lowers the plan without its gradient all-reduces.
  if (const char* fault = std::getenv("AUTOPAR_FAULT"); fault != nullptr) {
    int faultRank = -1;
    int faultStep = -1;
    if (std::string(fault) == "drop-gradient-sums") {
      config.dropGradientSums = true;
    } else if (std::sscanf(fault, "%d:%d", &faultRank, &faultStep) == 2 && faultRank == *rank) {
      config.dieAtStep = faultStep;
    }
  }
  runtime::Program program{loaded->graph,
                           loaded->sharding,
                           loaded->cluster,
                           loaded->plan.parameters,
                           loaded->opStage,
                           loaded->stages,
                           loaded->plan.pipeline.microBatches,
                           loaded->opChunk};
  auto result = runtime::execute(program, connection, config, [&](const runtime::StepReport& step) {
    fmt::print("rank {} step {} loss {:.6f} time {:.1f} ms\n", *rank, step.step, step.loss,
               step.seconds * 1e3);
    std::fflush(stdout);
  });
  if (!result) {
    fmt::print(stderr, "autopar: error: {}\n", result.error().message);
    return kExitFailed;
  }
  if (!options.resultDir.empty()) {
    const std::string path = fmt::format("{}/rank-{}.pt", options.resultDir, *rank);
    if (auto status = runtime::writeResult(*result, path); !status) {
      fmt::print(stderr, "autopar: error: {}\n", status.error().message);
      return kExitFailed;
    }
  }
  return kExitOk;
}

std::vector<std::string> rankArguments(const RunOptions& options, const std::string& resultDir) {
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
                                options.address};
  if (options.config.sgd) args.push_back("--sgd");
  if (!resultDir.empty()) args.insert(args.end(), {"--result-dir", resultDir});
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
  auto loaded = loadRun(options.planPath);
  if (!loaded) return reportError(loaded.error());
  if (auto status = checkRanks(loaded->plan, options.ranks, options.planPath); !status) {
    return reportError(status.error());
  }
  runtime::LaunchOptions launch{options.ranks, options.address, rankArguments(options, ""), {}};
  if (auto status = runtime::launch(launch); !status) {
    fmt::print(stderr, "autopar: error: {}\n", status.error().message);
    return kExitFailed;
  }
  fmt::print("autopar run: {} ranks finished {} steps\n", options.ranks, options.config.steps);
  return kExitOk;
}

/// The worst relative difference of the ranks' parameter blocks from the reference's: per
/// parameter, max |block - reference| over max |reference|.
struct Difference {
  double value = 0;
  std::string where;
};

Difference compareParameters(const runtime::RankResult& reference,
                             const std::vector<runtime::RankResult>& ranks) {
  std::map<std::string, const runtime::ParameterBlock*> whole;
  for (const auto& block : reference.parameters) whole[block.name] = &block;
  Difference worst;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& block : ranks[r].parameters) {
      const runtime::ParameterBlock& full = *whole.at(block.name);
      double scale = 0;
      for (float v : full.values) scale = std::max(scale, static_cast<double>(std::abs(v)));
      // Walk the block's elements in row-major order and find each in the full tensor.
      std::vector<int64_t> index(block.ranges.size());
      for (size_t d = 0; d < index.size(); ++d) index[d] = block.ranges[d].first;
      double diff = 0;
      for (float value : block.values) {
        int64_t flat = 0;
        for (size_t d = 0; d < index.size(); ++d) flat = flat * full.fullShape[d] + index[d];
        diff = std::max(
            diff, std::abs(static_cast<double>(value) - full.values[static_cast<size_t>(flat)]));
        for (size_t d = index.size(); d-- > 0;) {
          if (++index[d] < block.ranges[d].second) break;
          index[d] = block.ranges[d].first;
        }
      }
      const double relative = scale > 0 ? diff / scale : diff;
      if (relative >= worst.value) {
        worst = {relative, fmt::format("{} on rank {}", block.name, r)};
      }
    }
  }
  return worst;
}

int runCheck(const RunOptions& options) {
  auto loaded = loadRun(options.planPath);
  if (!loaded) return reportError(loaded.error());
  if (auto status = checkRanks(loaded->plan, options.ranks, options.planPath); !status) {
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
                          {}};
  auto reference = runtime::execute(serial, {}, options.config, [](const runtime::StepReport& s) {
    fmt::print("unsharded step {} loss {:.6f} time {:.1f} ms\n", s.step, s.loss, s.seconds * 1e3);
  });
  if (!reference) return reportError(reference.error());

  char pattern[] = "/tmp/autopar-check-XXXXXX";
  const char* dir = mkdtemp(pattern);
  if (dir == nullptr) return reportError(Error{"check: cannot create a temporary directory"});
  runtime::LaunchOptions launch{options.ranks, options.address, rankArguments(options, dir), {}};
  const Status launched = runtime::launch(launch);
  std::vector<runtime::RankResult> results;
  std::optional<Error> failure;
  if (!launched) failure = launched.error();
  for (int r = 0; r < options.ranks && !failure; ++r) {
    auto result = runtime::readResult(fmt::format("{}/rank-{}.pt", dir, r));
    if (!result)
      failure = result.error();
    else
      results.push_back(std::move(*result));
  }
  std::filesystem::remove_all(dir);
  if (failure) {
    fmt::print(stderr, "autopar: error: {}\n", failure->message);
    return kExitFailed;
  }
  Difference loss;
  for (size_t r = 0; r < results.size(); ++r) {
    for (const auto& step : results[r].steps) {
      const double expected = reference->steps[static_cast<size_t>(step.step)].loss;
      const double relative = std::abs(step.loss - expected) / std::abs(expected);
      if (relative >= loss.value)
        loss = {relative, fmt::format("step {} on rank {}", step.step, r)};
    }
  }
  const Difference parameters = compareParameters(*reference, results);
  const bool pass = loss.value <= kTolerance && parameters.value <= kTolerance;
  fmt::print("check: {} on {} ranks, {} steps against the unsharded model\n", options.planPath,
             options.ranks, options.config.steps);
  fmt::print("  loss        max relative difference {:.3g} ({})\n", loss.value, loss.where);
  fmt::print("  parameters  max relative difference {:.3g} ({})\n", parameters.value,
             parameters.where);
  fmt::print("{} (tolerance {:g})\n", pass ? "PASS" : "FAIL", kTolerance);
  return pass ? kExitOk : kExitFailed;
}

void addCommonOptions(CLI::App* verb, RunOptions& options) {
  verb->add_option("--plan", options.planPath, "plan JSON written by autopar plan --out");
  verb->add_option("--steps", options.config.steps, "training steps")->check(positive());
  verb->add_option("--seed", options.config.seed, "seed of the synthetic data and parameters");
  verb->add_option("--lr", options.config.learningRate, "Adam's learning rate")->check(positive());
  verb->add_flag("--sgd", options.config.sgd, "plain SGD instead of Adam");
  verb->add_option("--adam-eps", options.config.adamEpsilon, "Adam's epsilon")->check(positive());
  verb->add_option("--address", options.address,
                   "address the store and Gloo bind to (default loopback)");
}

}  // namespace

void addRunVerbs(CLI::App& app, Action& action) {
  auto run = std::make_shared<RunOptions>();
  CLI::App* runVerb = app.add_subcommand(
      "run",
      "Run a plan's training steps on N local ranks (or join a job from RANK, WORLD_SIZE, "
      "MASTER_ADDR, MASTER_PORT)");
  addCommonOptions(runVerb, *run);
  runVerb->add_option("--ranks", run->ranks, "start this many local ranks")->check(positive());
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
