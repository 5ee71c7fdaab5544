/// `autopar profile`: measure a transformer's blocks on local ranks and write the block table the
/// hybrid search reads (docs/profile-table.md), by seed 003's sampling: the model built with 2
/// and with 4 layers, run Megatron-style at each TP degree and micro-batch size, and differenced.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/verbs.h"
#include "frontend/graph_json.h"
#include "planner/configuration/profile_table.h"
#include "planner/inputs.h"
#include "runtime/executor.h"
#include "runtime/launcher.h"
#include "runtime/node_exchange.h"
#include "runtime/result_file.h"
#include "runtime/step_figures.h"
#include "util/atomic_file.h"
#include "util/temporary_directory.h"

namespace autopar::cli {

namespace {

constexpr int kExitFailed = 1;

struct ProfileOptions {
  std::string model;
  std::string cluster = "cpu-host";
  std::vector<int64_t> tensorParallel{1};
  std::vector<int64_t> microBatches{1};
  std::string sequenceParallel = "off";  ///< with TP > 1: off, on, or both
  int64_t sequence = 0;
  int steps = 6;
  std::string out;
  /// Seed 003's sampling cluster: nodes, this node's rank, node 0's address and port, and the
  /// devices of a node (0: the widest --tp).
  runtime::NodeGroup nodes;
  int nprocPerNode = 0;
};

/// Every setting to measure, in a fixed order; node r measures those at r, r + N, ...
std::vector<planner::BlockSetting> settingsOf(const ProfileOptions& options) {
  std::vector<planner::BlockSetting> settings;
  for (int64_t tp : options.tensorParallel) {
    for (int64_t mbs : options.microBatches) {
      std::vector<bool> variants{options.sequenceParallel == "on" && tp > 1};
      if (options.sequenceParallel == "both" && tp > 1) variants = {false, true};
      for (bool sequenceParallel : variants) {
        settings.push_back({tp, 1, 1, sequenceParallel, mbs, ir::Recompute::kNone});
      }
    }
  }
  return settings;
}

/// The sampling cluster's options, checked: one line naming the flag.
Status checkNodes(const ProfileOptions& options) {
  const runtime::NodeGroup& nodes = options.nodes;
  if (nodes.nodeRank >= nodes.nodes) {
    return Error{fmt::format("--node-rank {}: expected 0 to {} (--nnodes {})", nodes.nodeRank,
                             nodes.nodes - 1, nodes.nodes)};
  }
  for (int64_t tp : options.tensorParallel) {
    if (options.nprocPerNode > 0 && tp > options.nprocPerNode) {
      return Error{fmt::format("--tp {}: above --nproc-per-node {} (a setting runs within a node)",
                               tp, options.nprocPerNode)};
    }
  }
  if (nodes.nodes == 1) return {};
  if (nodes.port == 0) return Error{"--master-port: needed with --nnodes above 1"};
  // Node 0 hosts the store, so its address must be one of its own.
  if (nodes.nodeRank == 0) {
    if (auto local = runtime::checkAddress(nodes.address); !local) {
      return local.error().in("--master-addr");
    }
  }
  return {};
}

/// Node 0's table: its own and every other node's entries (their JSON, from gatherToNodeZero).
Expected<planner::ProfileTable> mergeTables(const std::vector<std::string>& blobs,
                                            planner::ProfileTable table) {
  for (size_t node = 1; node < blobs.size(); ++node) {
    auto part =
        planner::parseProfileTable(blobs[node], fmt::format("node {}'s table", node), table.device);
    if (!part) return part.error();
    table.entries.insert(part->entries.begin(), part->entries.end());
  }
  return table;
}

/// Builds the model with `layers` layers for `setting`, runs it on setting.tp local ranks and
/// returns rank 0's figures.
Expected<planner::SampledRun> measure(const ProfileOptions& options,
                                      frontend::TransformerConfig config,
                                      const planner::BlockSetting& setting, int64_t layers,
                                      const std::string& scratch) {
  config.layers = layers;
  planner::ModelOptions modelOptions;
  modelOptions.transformer = config;
  modelOptions.microBatch = setting.mbs;
  modelOptions.sequence = options.sequence;
  if (setting.tp > 1) {
    modelOptions.parallel =
        ir::ParallelConfig{.tp = setting.tp, .sequenceParallel = setting.sequenceParallel};
  }
  auto model = planner::loadModel(options.model, modelOptions, setting.tp);
  if (!model) return model.error();
  const std::string graphPath = fmt::format("{}/graph.json", scratch);
  std::ofstream(graphPath) << frontend::graphToJson(model->graph).dump();
  runtime::LaunchOptions launch;
  launch.ranks = static_cast<int>(setting.tp);
  launch.arguments = {"run",
                      "--graph",
                      graphPath,
                      "--cluster",
                      options.cluster,
                      "--steps",
                      std::to_string(options.steps),
                      "--measure"};
  auto results = runtime::launchAndCollect(launch, 1);
  if (!results) return results.error();
  const runtime::MedianFigures figures = runtime::medianFigures(results->front());
  auto part = [&](runtime::Part which) {
    const runtime::PartCost& cost = figures.parts[static_cast<size_t>(which)];
    return planner::SampledRun::Part{cost.forwardSeconds, cost.keptBytes};
  };
  return planner::SampledRun{figures.forward,
                             figures.backward,
                             figures.activation,
                             part(runtime::Part::kFirst),
                             part(runtime::Part::kLayers),
                             part(runtime::Part::kLast)};
}

int runProfile(const ProfileOptions& options) {
  auto config = planner::transformerConfigOf(options.model);
  if (!config) return reportError(config.error());
  if (config->vision.layers > 0) {
    return reportError(
        Error{fmt::format("{}: profile measures decoder layers only; the vision "
                          "tower is not profiled yet",
                          options.model)});
  }
  if (auto status = checkNodes(options); !status) return reportError(status.error());
  auto cluster = planner::loadCluster(options.cluster, 1, 0);
  if (!cluster) return reportError(cluster.error());
  // The ranks run LibTorch on this machine's CPUs: the table is for CPU ranks only.
  const std::string ranks = planner::loadCluster("cpu-host", 1, 0)->device.name;
  if (cluster->device.name != ranks) {
    return reportError(Error{fmt::format(
        "--cluster {}: its device is {}, but the ranks run LibTorch on this machine's CPUs; the "
        "table is for {} devices (cpu-host, or a cluster yaml with that device), since block "
        "times do not carry across devices",
        options.cluster, cluster->device.name, ranks)});
  }
  planner::ProfileTable table;
  table.device = cluster->device.name;
  table.nnodes = options.nodes.nodes;
  int64_t widest = options.nprocPerNode;
  for (int64_t tp : options.tensorParallel) widest = std::max(widest, tp);
  table.nprocPerNode = static_cast<int>(widest);
  const util::TemporaryDirectory scratchDirectory("autopar-profile");
  if (scratchDirectory.empty()) {
    return reportError(Error{"profile: cannot create a temporary directory"});
  }
  const char* scratch = scratchDirectory.path().c_str();
  const std::vector<planner::BlockSetting> settings = settingsOf(options);
  const runtime::NodeGroup& nodes = options.nodes;
  for (size_t i = static_cast<size_t>(nodes.nodeRank); i < settings.size();
       i += static_cast<size_t>(nodes.nodes)) {
    const planner::BlockSetting& setting = settings[i];
    auto two = measure(options, *config, setting, 2, scratch);
    auto four = two ? measure(options, *config, setting, 4, scratch) : two;
    if (!two || !four) {
      fmt::print(stderr, "autopar: error: profile tp {} mbs {}: {}\n", setting.tp, setting.mbs,
                 (!two ? two : four).error().message);
      return kExitFailed;
    }
    const planner::MeasuredBlocks blocks = planner::differenceRuns(*two, *four, 2);
    const planner::MeasuredPart& layer = blocks.layers.at("llm");
    fmt::print(
        "{}tp {} mbs {}{}: layer forward {:.2f} ms, backward {:.2f} ms, keeps {}; "
        "embedding {:.2f} ms, head {:.2f} ms forward\n",
        nodes.nodes > 1 ? fmt::format("node {}: ", nodes.nodeRank) : "", setting.tp, setting.mbs,
        setting.sequenceParallel ? " sp" : "", layer.forwardSeconds * 1e3,
        layer.backwardSeconds * 1e3, planner::formatBytes(layer.activationBytes),
        blocks.first->forwardSeconds * 1e3, blocks.last->forwardSeconds * 1e3);
    table.entries[setting] = blocks;
  }
  auto blobs = runtime::gatherToNodeZero(nodes, planner::profileTableToJson(table, options.model));
  if (!blobs) return reportError(blobs.error());
  if (nodes.nodeRank != 0) {
    fmt::print("node {} of {}: measured {} settings; node 0 writes the table\n", nodes.nodeRank,
               nodes.nodes, table.entries.size());
    return kExitOk;
  }
  auto merged = mergeTables(*blobs, std::move(table));
  if (!merged) return reportError(merged.error());
  table = std::move(*merged);
  if (auto written =
          writeFileAtomically(options.out, planner::profileTableToJson(table, options.model));
      !written) {
    return reportError(written.error().in("--out"));
  }
  fmt::print("wrote {} ({} settings)\n", options.out, table.entries.size());
  return kExitOk;
}

}  // namespace

void addProfileVerb(CLI::App& app, Action& action) {
  auto options = std::make_shared<ProfileOptions>();
  CLI::App* verb = app.add_subcommand(
      "profile",
      "Measure a transformer's layer, embedding and head on local ranks (2 and 4 "
      "layers, differenced) and write the block table search --profile reads");
  verb->add_option("--model", options->model, "preset name or model config file")->required();
  verb->add_option("--cluster", options->cluster, "the cluster the ranks stand for (its device)");
  verb->add_option("--tp", options->tensorParallel, "tensor-parallel degrees to measure, e.g. 1,2")
      ->delimiter(',')
      ->check(positive());
  verb->add_option("--mbs", options->microBatches, "micro-batch sizes to measure, e.g. 1,2")
      ->delimiter(',')
      ->check(positive());
  verb->add_option("--sequence-parallel", options->sequenceParallel,
                   "with TP > 1, Megatron-LM sequence parallelism: on (the flag alone), off, or "
                   "both (each setting measured with and without)")
      ->expected(0, 1)
      ->default_str("on")
      ->check(CLI::IsMember({"on", "off", "both"}));
  verb->add_option("--seq", options->sequence, "sequence length")->check(positive());
  verb->add_option("--steps", options->steps, "steps per run; the first warms up")
      ->check(CLI::Range(2, 1000));
  verb->add_option("--out", options->out, "the table to write")->required();
  // Seed 003's sampling cluster: each node runs this command; node 0 collects and writes.
  runtime::NodeGroup& nodes = options->nodes;
  verb->add_option("--nnodes", nodes.nodes, "nodes of the sampling cluster (each runs this)")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--node-rank", nodes.nodeRank, "this node's rank, 0 (which writes) to N - 1")
      ->check(CLI::NonNegativeNumber);
  verb->add_option("--nproc-per-node", options->nprocPerNode,
                   "devices of a sampling node (default: the widest --tp)")
      ->check(positiveAtMost(limits::kMaxDevicesPerNode));
  verb->add_option("--master-addr", nodes.address,
                   "node 0's address; it hosts the store the nodes exchange results through")
      ->capture_default_str();
  verb->add_option("--master-port", nodes.port, "node 0's store port (the same on every node)")
      ->check(CLI::Range(1, 65535));
  verb->callback([&action, options] { action = [options] { return runProfile(*options); }; });
}

}  // namespace autopar::cli
