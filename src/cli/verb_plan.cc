/// `autopar plan`: evaluate a user-annotated (semi-auto) plan and print it with its estimate.

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <numeric>

#include "cli/inputs.h"
#include "cli/plan_assembly.h"
#include "cli/plan_report.h"
#include "cli/training_flags.h"
#include "cli/verbs.h"
#include "cost/graph_cost.h"
#include "frontend/mindformers_yaml.h"
#include "plan/plan_json.h"
#include "rules/graph_sharding.h"
#include "search/driver.h"
#include "search/pipeline.h"
#include "sim/step_estimate.h"

namespace autopar::cli {

namespace {

struct PlanOptions {
  std::string model;
  std::string cluster = "dgx-a100-80g";
  int nodes = 1;
  int devices = 0;
  ModelOptions modelOptions;
  std::vector<std::string> shards;
  std::string out;
  bool json = false;
  bool enableAllToAll = false;
  std::string search = "semi_auto";
  bool explain = false;
  double memCoeff = 0.1;
  std::string config;      ///< a MindFormers-style run yaml
  std::string configNote;  ///< what the yaml set, printed with the report
  TrainingFlags training;
};

Expected<std::map<std::string, layout::Strategy>> parseShards(
    const std::vector<std::string>& shards) {
  std::map<std::string, layout::Strategy> overrides;
  for (const auto& text : shards) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error{fmt::format(
          "--shard '{}': expected OP=STRATEGY, e.g. dense1.matmul=((2,4),(4,1))", text)};
    }
    auto strategy = layout::parseStrategy(text.substr(eq + 1));
    if (!strategy) return strategy.error().in(fmt::format("--shard {}", text.substr(0, eq)));
    overrides[text.substr(0, eq)] = std::move(*strategy);
  }
  return overrides;
}

struct Evaluated {
  LoadedModel model;
  search::SearchOutcome outcome;
  cost::EvaluateOptions evaluateOptions;
  sim::PipelineConfig pipeline;
  search::StageAssignment stages;
  cost::CostReport report;
  sim::StepEstimate estimate;
  int64_t devicesPerStage = 0;

  [[nodiscard]] int64_t peakBytes() const { return estimate.peakMemory().total(); }
};

Expected<Evaluated> evaluate(const PlanOptions& options, const cluster::Cluster& cluster,
                             const ModelOptions& modelOptions) {
  auto pipeline = pipelineConfig(options.training, cluster.numDevices);
  if (!pipeline) return pipeline.error();
  const int64_t devicesPerStage = cluster.numDevices / pipeline->stages;
  auto model = loadModel(options.model, modelOptions, devicesPerStage);
  if (!model) return model.error();
  if (auto status = applyTrainingFlags(options.training, model->graph); !status) {
    return status.error();
  }
  auto stages = search::assignStages(model->graph, pipeline->stages, pipeline->virtualStages);
  if (!stages) return stages.error();
  search::SearchRequest request;
  auto mode = search::parseSearchMode(options.search);
  if (!mode) return mode.error().in("--search");
  request.mode = *mode;
  auto overrides = parseShards(options.shards);
  if (!overrides) return overrides.error();
  request.overrides = std::move(*overrides);
  request.explain = options.explain;
  request.memCoeff = options.memCoeff;
  request.enableAllToAll = options.enableAllToAll;
  std::vector<int> ranks(static_cast<size_t>(devicesPerStage));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto outcome = search::searchStrategies(model->graph, ranks, cluster, request);
  if (!outcome) return outcome.error();
  auto evaluateOptions =
      cli::evaluateOptions(options.training, request.mode == search::SearchMode::kDataParallel);
  if (!evaluateOptions) return evaluateOptions.error();
  evaluateOptions->redistribution.enableAllToAll = options.enableAllToAll;
  evaluateOptions->stageOfOp = stages->virtualStageOf;
  evaluateOptions->stages = pipeline->stages * pipeline->virtualStages;
  evaluateOptions->physicalStages = pipeline->stages;
  evaluateOptions->rankStride = static_cast<int>(devicesPerStage);
  auto report = cost::evaluateGraph(model->graph, outcome->sharding.ops, cluster, *evaluateOptions);
  if (!report) return report.error();
  auto estimate = sim::estimateStep(*report, *pipeline);
  if (!estimate) return estimate.error();
  return Evaluated{
      std::move(*model),  std::move(*outcome), std::move(*evaluateOptions), *pipeline,
      std::move(*stages), std::move(*report),  std::move(*estimate),        devicesPerStage};
}

/// For a transformer preset that does not fit: the smallest tensor-parallel degree that would.
std::string suggestFit(const PlanOptions& options, const cluster::Cluster& cluster) {
  if (options.model.ends_with(".json")) {
    return "shard the largest parameters with --shard (see the strategies above)";
  }
  if (options.search == "recursive_programming") {
    // Seed 000: raise mem_coeff (by factors of 4) to trade data parallelism for memory.
    for (double memCoeff = options.memCoeff * 4; memCoeff <= 1e4; memCoeff *= 4) {
      PlanOptions candidate = options;
      candidate.memCoeff = memCoeff;
      auto evaluated = evaluate(candidate, cluster, options.modelOptions);
      if (!evaluated) break;
      const int64_t peak = evaluated->peakBytes();
      if (peak <= cluster.device.memoryBytes) {
        return fmt::format("it would fit with --mem-coeff {:g} (estimated peak {})", memCoeff,
                           formatBytes(peak));
      }
    }
  }
  const int64_t currentTp = std::max<int64_t>(options.modelOptions.tensorParallel, 1);
  for (int64_t tp = currentTp * 2; tp <= cluster.numDevices; tp *= 2) {
    if (cluster.numDevices % tp != 0) break;
    ModelOptions candidate = options.modelOptions;
    candidate.tensorParallel = tp;
    candidate.dataParallel = cluster.numDevices / tp;
    auto evaluated = evaluate(options, cluster, candidate);
    if (!evaluated) continue;
    const int64_t peak = evaluated->peakBytes();
    if (peak <= cluster.device.memoryBytes) {
      return fmt::format("it would fit with --tp {} --dp {} (estimated peak {})", tp,
                         cluster.numDevices / tp, formatBytes(peak));
    }
  }
  return fmt::format("no tensor-parallel degree up to {} makes it fit; add devices (--nodes)",
                     cluster.numDevices);
}

/// The plan features a run yaml sets (seed 001's and 004's keys as MindFormers spells them).
void applyYamlFeatures(const frontend::ParallelSettings& parallel, PlanOptions& options) {
  TrainingFlags& training = options.training;
  training.pipelineStages = static_cast<int>(parallel.pipelineStage);
  training.optimizerParallel = parallel.enableParallelOptimizer.value_or(false);
  training.optimizerThresholdKb = parallel.parallelOptimizerThresholdKb;
  training.gradientAccumulationShard = parallel.gradientAccumulationShard;
  training.recompute = parallel.recompute         ? "full"
                       : parallel.selectRecompute ? "selective"
                                                  : "none";
  training.noMpCommRecompute = !parallel.mpCommRecompute;
  training.parallelOptimizerCommRecompute = parallel.parallelOptimizerCommRecompute;
  options.enableAllToAll = parallel.enableAllToAll;
  options.modelOptions.sequenceParallel = parallel.useSeqParallel;
}

/// Sets the micro-batch per data-parallel replica for `stages` pipeline stages: a stage's devices
/// share one micro-batch of the cluster's batch formula over those devices.
Status applyYamlBatch(const frontend::MindFormersConfig& config, int64_t numDevices, int stages,
                      PlanOptions& options) {
  const frontend::ParallelSettings& parallel = config.parallel;
  const int64_t stageDevices = numDevices / stages;
  const int64_t dataParallel = parallel.parallelMode == frontend::ParallelMode::kSemiAuto
                                   ? options.modelOptions.dataParallel
                                   : stageDevices;
  const int64_t stageBatch = frontend::clusterMicroBatchSize(config, stageDevices);
  if (stageBatch % dataParallel != 0) {
    return Error{fmt::format("{}: a micro-batch of {} samples does not split over data parallel {}",
                             options.config, stageBatch, dataParallel)};
  }
  options.modelOptions.microBatch = stageBatch / dataParallel;
  // A pipeline runs micro_batch_num micro-batches per step; without one, MindFormers accumulates
  // gradient_accumulation_steps of them.
  options.training.microBatches =
      static_cast<int>(stages > 1 ? parallel.microBatchNum : parallel.gradientAccumulationSteps);
  return {};
}

std::string configSummary(const PlanOptions& options, const frontend::MindFormersConfig& config,
                          int64_t numDevices) {
  const frontend::ParallelSettings& parallel = config.parallel;
  return fmt::format("{}: {}, search {}, mem_coeff {}; {}", options.config,
                     frontend::parallelModeName(parallel.parallelMode), options.search,
                     parallel.memCoeff, frontend::globalBatchSizeReport(config, numDevices));
}

/// Applies a run yaml's parallel settings and model to the options, as MindFormers would.
Expected<frontend::MindFormersConfig> applyRunYaml(PlanOptions& options, int64_t numDevices) {
  auto config = frontend::loadMindFormersYaml(options.config);
  if (!config) return config.error();
  if (auto status = frontend::checkDeviceCount(*config, numDevices); !status) return status.error();
  const frontend::ParallelSettings& parallel = config->parallel;
  switch (parallel.parallelMode) {
    case frontend::ParallelMode::kDataParallel:
      options.search = "data_parallel";
      break;
    case frontend::ParallelMode::kSemiAuto:
      options.search = "semi_auto";
      options.modelOptions.tensorParallel = parallel.modelParallel;
      options.modelOptions.dataParallel = parallel.dataParallel;
      break;
    case frontend::ParallelMode::kAuto:
      options.search = std::string(frontend::searchModeName(parallel.searchMode));
      break;
  }
  options.memCoeff = parallel.memCoeff;
  applyYamlFeatures(parallel, options);
  if (numDevices % parallel.pipelineStage != 0) {
    return Error{
        fmt::format("{}: parallel_config.pipeline_stage: {} stages do not split {} devices",
                    options.config, parallel.pipelineStage, numDevices)};
  }
  if (auto status = applyYamlBatch(*config, numDevices, options.training.pipelineStages, options);
      !status) {
    return status.error();
  }
  if (config->model) {
    options.modelOptions.transformer = config->model;
    if (options.model.empty()) options.model = config->model->name;
  }
  if (options.model.empty()) {
    return Error{
        fmt::format("{}: model.model_config: missing; give the model there or with "
                    "--model",
                    options.config)};
  }
  options.configNote = configSummary(options, *config, numDevices);
  return config;
}

/// Seed 000's auto_pipeline: among stage counts that divide the devices and do not exceed
/// micro_batch_num, the fastest plan whose peak memory leaves 10% of the device free. Returns the
/// stage count and one line on how it was chosen.
std::pair<int, std::string> choosePipelineStages(const PlanOptions& options,
                                                 const frontend::MindFormersConfig& config,
                                                 const cluster::Cluster& cluster) {
  constexpr double kHeadroom = 0.9;
  const auto budget =
      static_cast<int64_t>(kHeadroom * static_cast<double>(cluster.device.memoryBytes));
  int best = 0;
  double bestStep = 0;
  std::vector<std::string> tried;
  for (int stages = 1; stages <= config.parallel.microBatchNum; ++stages) {
    if (cluster.numDevices % stages != 0) continue;
    PlanOptions candidate = options;
    candidate.training.pipelineStages = stages;
    if (config.parallel.parallelMode == frontend::ParallelMode::kSemiAuto) {
      // Semi-auto keeps model_parallel; data parallelism takes the devices the stages leave.
      const int64_t perStage = cluster.numDevices / stages;
      if (perStage % config.parallel.modelParallel != 0) continue;
      candidate.modelOptions.dataParallel = perStage / config.parallel.modelParallel;
    }
    if (!applyYamlBatch(config, cluster.numDevices, stages, candidate)) continue;
    auto evaluated = evaluate(candidate, cluster, candidate.modelOptions);
    if (!evaluated) continue;
    const int64_t peak = evaluated->peakBytes();
    // Step times cover different batches (micro_batch_num with a pipeline, the accumulation steps
    // without one): compare time per sample.
    const double samples =
        static_cast<double>(candidate.training.microBatches *
                            frontend::clusterMicroBatchSize(config, cluster.numDevices / stages));
    const double perSample = evaluated->estimate.stepSeconds / samples;
    tried.push_back(
        fmt::format("{}: {}/sample {}", stages, formatSeconds(perSample), formatBytes(peak)));
    if (peak > budget) continue;
    if (best == 0 || perSample < bestStep) {
      best = stages;
      bestStep = perSample;
    }
  }
  const std::string summary =
      fmt::format("stages tried (time per sample, peak memory): {}", fmt::join(tried, "; "));
  if (best == 0) {
    return {static_cast<int>(config.parallel.pipelineStage),
            fmt::format("no stage count up to micro_batch_num {} fits within 90% of device "
                        "memory; {}",
                        config.parallel.microBatchNum, summary)};
  }
  return {best, fmt::format("the fastest within 90% of device memory; {}", summary)};
}

/// Applies auto_pipeline when on; when off, says which stage count it would choose.
void pipelineNote(PlanOptions& options, const frontend::MindFormersConfig& config,
                  const cluster::Cluster& cluster) {
  auto [stages, how] = choosePipelineStages(options, config, cluster);
  if (config.parallel.autoPipeline) {
    options.training.pipelineStages = stages;
    if (config.parallel.parallelMode == frontend::ParallelMode::kSemiAuto) {
      options.modelOptions.dataParallel =
          cluster.numDevices / stages / config.parallel.modelParallel;
    }
    (void)applyYamlBatch(config, cluster.numDevices, stages, options);
    frontend::MindFormersConfig chosen = config;
    chosen.parallel.pipelineStage = stages;
    options.configNote = configSummary(options, chosen, cluster.numDevices);
    options.configNote += fmt::format("\nauto_pipeline: {} stage(s), {}", stages, how);
  } else if (stages != options.training.pipelineStages) {
    options.configNote +=
        fmt::format("\npipeline_stage {} as configured; auto_pipeline would choose {} ({})",
                    options.training.pipelineStages, stages, how);
  }
}

int runPlan(PlanOptions options) {
  auto cluster = loadCluster(options.cluster, options.nodes, options.devices);
  if (!cluster) return reportError(cluster.error());
  if (!options.config.empty()) {
    auto config = applyRunYaml(options, cluster->numDevices);
    if (!config) return reportError(config.error());
    pipelineNote(options, *config, *cluster);
  }
  if (options.model.empty())
    return reportError(Error{"--model: required (or --config with a model)"});
  auto evaluated = evaluate(options, *cluster, options.modelOptions);
  if (!evaluated) return reportError(evaluated.error());
  const PlanContext context{evaluated->evaluateOptions, evaluated->pipeline,
                            evaluated->stages.virtualStageOf, evaluated->estimate,
                            static_cast<size_t>(evaluated->devicesPerStage)};
  plan::Plan result = assemblePlan(evaluated->model, evaluated->outcome.sharding, evaluated->report,
                                   context, *cluster, options.cluster);
  result.search = options.search;
  for (const auto& conflict : evaluated->outcome.conflicts) {
    result.conflicts.push_back(conflict.description);
  }
  const auto json = plan::planToJson(result).dump(2);
  if (!options.out.empty()) {
    std::ofstream file(options.out);
    if (!file) return reportError(Error{fmt::format("--out {}: cannot write file", options.out)});
    file << json << "\n";
  }
  if (options.json) {
    fmt::print("{}\n", json);
  } else {
    if (options.explain) {
      for (const auto& line : evaluated->outcome.explanation) fmt::print("{}\n", line);
      fmt::print("\n");
    }
    if (!options.configNote.empty()) fmt::print("{}\n\n", options.configNote);
    ReportHeader header{options.model, cluster->name, cluster->device.name,
                        evaluated->model.graph.parameterCount()};
    fmt::print("{}", formatPlanReport(result, header));
  }
  if (result.estimate.fits) return kExitOk;
  fmt::print(stderr,
             "autopar: does not fit: peak memory {} exceeds the {} of one {} (parameters+"
             "gradients+optimizer states {}, activations {}); {}\n",
             formatBytes(result.estimate.peakMemoryBytes), formatBytes(cluster->device.memoryBytes),
             cluster->device.name,
             formatBytes(result.estimate.memory.parameters + result.estimate.memory.gradients +
                         result.estimate.memory.optimizerStates),
             formatBytes(result.estimate.memory.activations), suggestFit(options, *cluster));
  return kExitDoesNotFit;
}

}  // namespace

void addPlanVerb(CLI::App& app, Action& action) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* verb = app.add_subcommand(
      "plan",
      "Evaluate a semi-auto plan: annotated ops keep their strategy, the rest run data "
      "parallel. Prints strategies, redistributions, step time and memory.");
  verb->add_option("--model", options->model,
                   "preset name (autopar models), graph .json or .onnx (or set by --config)");
  verb->add_option("--config", options->config,
                   "MindFormers-style run yaml: parallel_mode, search_mode, mem_coeff, "
                   "data_parallel, model_parallel, batch and model (docs/mindformers-yaml.md)");
  verb->add_option("--cluster", options->cluster, "preset name (autopar clusters) or .yaml spec")
      ->capture_default_str();
  verb->add_option("--nodes", options->nodes, "number of nodes of a preset")
      ->check(CLI::PositiveNumber);
  verb->add_option("--devices", options->devices, "use the first N devices")
      ->check(CLI::PositiveNumber);
  verb->add_option("--micro-batch", options->modelOptions.microBatch, "micro-batch size")
      ->check(CLI::PositiveNumber);
  verb->add_option("--seq", options->modelOptions.sequence, "sequence length")
      ->check(CLI::PositiveNumber);
  verb->add_option("--tp", options->modelOptions.tensorParallel,
                   "annotate a transformer preset Megatron-style with this tensor-parallel degree")
      ->check(CLI::PositiveNumber);
  verb->add_option("--dp", options->modelOptions.dataParallel,
                   "data-parallel degree with --tp (default: devices / tp)")
      ->check(CLI::PositiveNumber);
  verb->add_option("--shard", options->shards, "OP=STRATEGY, e.g. dense1.matmul=((2,4),(4,1))");
  verb->add_flag("--alltoall", options->enableAllToAll, "let redistribution use all-to-all");
  verb->add_option("--search", options->search, "data_parallel | semi_auto | sharding_propagation")
      ->capture_default_str();
  verb->add_option("--mem-coeff", options->memCoeff,
                   "recursive_programming: price of replicated weights against data parallelism "
                   "(seed 000; higher leads to model parallelism and less memory)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  verb->add_flag("--explain", options->explain, "print the search's decisions, one line per op");
  addTrainingFlags(*verb, options->training);
  verb->add_flag("--sequence-parallel", options->modelOptions.sequenceParallel,
                 "with --tp: split norms, dropouts and residuals along the sequence (Megatron-LM)");
  verb->add_option("--out", options->out, "write the plan JSON here");
  verb->add_flag("--json", options->json, "print the plan JSON instead of the report");
  verb->callback([&action, options] { action = [options] { return runPlan(*options); }; });
}

}  // namespace autopar::cli
