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
#include "planner/inputs.h"
#include "planner/profile_table.h"
#include "runtime/executor.h"
#include "runtime/launcher.h"
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
  bool sequenceParallel = false;
  int64_t sequence = 0;
  int steps = 6;
  std::string out;
};

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
  auto cluster = planner::loadCluster(options.cluster, 1, 0);
  if (!cluster) return reportError(cluster.error());
  planner::ProfileTable table;
  table.device = cluster->device.name;
  table.nnodes = 1;
  int64_t widest = 1;
  for (int64_t tp : options.tensorParallel) widest = std::max(widest, tp);
  table.nprocPerNode = static_cast<int>(widest);
  const util::TemporaryDirectory scratchDirectory("autopar-profile");
  if (scratchDirectory.empty()) {
    return reportError(Error{"profile: cannot create a temporary directory"});
  }
  const char* scratch = scratchDirectory.path().c_str();
  for (int64_t tp : options.tensorParallel) {
    for (int64_t mbs : options.microBatches) {
      const planner::BlockSetting setting{
          tp, 1, 1, options.sequenceParallel && tp > 1, mbs, ir::Recompute::kNone};
      auto two = measure(options, *config, setting, 2, scratch);
      auto four = two ? measure(options, *config, setting, 4, scratch) : two;
      if (!two || !four) {
        fmt::print(stderr, "autopar: error: profile tp {} mbs {}: {}\n", tp, mbs,
                   (!two ? two : four).error().message);
        return kExitFailed;
      }
      const planner::MeasuredBlocks blocks = planner::differenceRuns(*two, *four, 2);
      const planner::MeasuredPart& layer = blocks.layers.at("llm");
      fmt::print(
          "tp {} mbs {}{}: layer forward {:.2f} ms, backward {:.2f} ms, keeps {}; "
          "embedding {:.2f} ms, head {:.2f} ms forward\n",
          tp, mbs, setting.sequenceParallel ? " sp" : "", layer.forwardSeconds * 1e3,
          layer.backwardSeconds * 1e3, planner::formatBytes(layer.activationBytes),
          blocks.first->forwardSeconds * 1e3, blocks.last->forwardSeconds * 1e3);
      table.entries[setting] = blocks;
    }
  }
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
  verb->add_flag("--sequence-parallel", options->sequenceParallel,
                 "with TP > 1, Megatron-LM sequence parallelism");
  verb->add_option("--seq", options->sequence, "sequence length")->check(positive());
  verb->add_option("--steps", options->steps, "steps per run; the first warms up")
      ->check(CLI::Range(2, 1000));
  verb->add_option("--out", options->out, "the table to write")->required();
  verb->callback([&action, options] { action = [options] { return runProfile(*options); }; });
}

}  // namespace autopar::cli
