#include "planner/run_yaml.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "frontend/mindformers_model.h"
#include "frontend/model_presets.h"
#include "ir/setting.h"

namespace autopar::planner {

namespace {

/// Sets `field` to the yaml's `value` unless the caller gave `setting`.
template <class T, class U>
void fromYaml(const PlanOptions& options, Setting setting, T& field, const U& value) {
  if (!options.given(setting)) field = value;
}

void applyYamlFeatures(const frontend::ParallelSettings& parallel, PlanOptions& options) {
  TrainingFlags& training = options.training;
  ir::TrainingSetup& setup = options.setup;
  fromYaml(options, Setting::kPipelineStages, setup.pp, parallel.pipelineStage);
  fromYaml(options, Setting::kOptimizerParallel, training.optimizerParallel,
           parallel.enableParallelOptimizer.value_or(false));
  fromYaml(options, Setting::kOptimizerThreshold, training.optimizerThresholdKb,
           parallel.parallelOptimizerThresholdKb);
  fromYaml(options, Setting::kGradientAccumulationShard, training.gradientAccumulationShard,
           parallel.gradientAccumulationShard);
  fromYaml(options, Setting::kRecompute, setup.recompute,
           parallel.recompute         ? ir::Recompute::kFull
           : parallel.selectRecompute ? ir::Recompute::kSelective
                                      : ir::Recompute::kNone);
  fromYaml(options, Setting::kMpCommRecompute, training.noMpCommRecompute,
           !parallel.mpCommRecompute);
  fromYaml(options, Setting::kParallelOptimizerCommRecompute,
           training.parallelOptimizerCommRecompute, parallel.parallelOptimizerCommRecompute);
  fromYaml(options, Setting::kRecomputeSliceActivation, training.recomputeSliceActivation,
           parallel.recomputeSliceActivation);
  fromYaml(options, Setting::kAllToAll, options.enableAllToAll, parallel.enableAllToAll);
  training.interleavedCopies = parallel.microBatchInterleaveNum;
  // MindFormers' Adam state (cost::defaultOptimizerState), and MindSpore's gradients take the
  // weight's 16-bit dtype, as under --grad-reduce-in-bf16.
  setup.optimizerState = cost::defaultOptimizerState(cost::Framework::kMindSpore);
  setup.codePath.gradReduceInBf16 = true;
  if (parallel.ppInterleaveNum > 1) {
    fromYaml(options, Setting::kSchedule, setup.schedule, ir::Schedule::kInterleaved);
    fromYaml(options, Setting::kVirtualStages, setup.vpp, parallel.ppInterleaveNum);
  }
  if (options.modelOptions.parallel) {
    fromYaml(options, Setting::kSequenceParallel, options.modelOptions.parallel->sequenceParallel,
             parallel.useSeqParallel);
  }
}

/// Sets the micro-batch per data-parallel replica for `stages` pipeline stages: a stage's devices
/// share one micro-batch of the cluster's batch formula over those devices.
Status applyYamlBatch(const frontend::MindFormersConfig& config, int64_t numDevices, int stages,
                      PlanOptions& options) {
  const frontend::ParallelSettings& parallel = config.parallel;
  const int64_t stageDevices = numDevices / stages;
  const int64_t dataParallel =
      frontend::shardsByLayout(parallel) ? options.modelOptions.parallel->dp : stageDevices;
  // The graph is one of the micro-batch's interleaved copies (cost::EvaluateOptions::copies):
  // the batch formula's micro-batch over micro_batch_interleave_num, one of its factors.
  const int64_t stageBatch =
      frontend::clusterMicroBatchSize(config, stageDevices) / parallel.microBatchInterleaveNum;
  options.modelOptions.graphBatch = 0;
  if (stageBatch % dataParallel == 0) {
    fromYaml(options, Setting::kMicroBatch, options.modelOptions.microBatch,
             stageBatch / dataParallel);
  } else if (parallel.parallelMode == frontend::ParallelMode::kAuto &&
             !options.given(Setting::kMicroBatch)) {
    // Auto-parallel has no data-parallel degree: the graph holds the stage's micro-batch and the
    // search cuts its batch as far as it divides (LLaMA2-70B's auto yaml: 2 samples, 8 devices).
    options.modelOptions.graphBatch = stageBatch;
  } else {
    return Error{fmt::format("{}: a micro-batch of {} samples does not split over data parallel {}",
                             options.config, stageBatch, dataParallel)};
  }
  // A pipeline runs micro_batch_num micro-batches per step; without one, MindFormers accumulates
  // gradient_accumulation_steps of them.
  fromYaml(
      options, Setting::kMicroBatches, options.training.microBatches,
      static_cast<int>(stages > 1 ? parallel.microBatchNum : parallel.gradientAccumulationSteps));
  return {};
}

/// Without full_batch, seed 000's formula counts batch_size on every device, but under a pipeline
/// the stages' devices share each micro-batch's samples (the first stage reads them, the last
/// their labels): a step trains the formula over one stage's devices, as the plan simulates.
std::string sharedSamplesNote(const frontend::MindFormersConfig& config, int64_t numDevices) {
  const int64_t stages = config.parallel.pipelineStage;
  if (stages <= 1 || config.parallel.fullBatch || numDevices % stages != 0) return "";
  return fmt::format(
      " counted on every device; the {} pipeline stages share each micro-batch's samples, so a "
      "step trains {}",
      stages, frontend::globalBatchSize(config, numDevices / stages));
}

std::string configSummary(const PlanOptions& options, const frontend::MindFormersConfig& config,
                          int64_t numDevices) {
  const frontend::ParallelSettings& parallel = config.parallel;
  return fmt::format(
      "{}: {}, search {}, mem_coeff {}{}; {}", options.config,
      frontend::parallelModeName(parallel.parallelMode), search::searchModeName(options.search),
      options.memCoeffRule != frontend::MemCoeffRule::kGiven
          ? std::string(frontend::memCoeffRuleName(options.memCoeffRule))
          : fmt::format("{:g}", options.memCoeff),
      options.given(Setting::kMemCoeff) ? " (--mem-coeff)" : "",
      frontend::globalBatchSizeReport(config, numDevices) + sharedSamplesNote(config, numDevices));
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
    candidate.setup.pp = stages;
    if (frontend::shardsByLayout(config.parallel)) {
      // The layout keeps model_parallel; data parallelism takes the devices the stages leave.
      const int64_t perStage = cluster.numDevices / stages;
      const int64_t tp = candidate.modelOptions.parallel->tp;
      if (perStage % tp != 0) continue;
      candidate.modelOptions.parallel->dp = perStage / tp;
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

}  // namespace

/// Applies a run yaml's parallel settings and model to the options, as MindFormers would.
Expected<frontend::MindFormersConfig> applyRunYaml(PlanOptions& options, int64_t numDevices) {
  auto config = frontend::loadMindFormersYaml(options.config);
  if (!config) return config.error();
  if (auto status = frontend::checkDeviceCount(*config, numDevices); !status) return status.error();
  // A --framework given on the command line wins over the yaml's.
  if (config->framework && !options.frameworkNamed) {
    auto framework = cost::parseFramework(*config->framework);
    if (!framework) {
      // The flag's message names the releases a known framework has, after its own prefix.
      const std::string& message = framework.error().message;
      return Error{
          fmt::format("{}: framework: {}", options.config, message.substr(message.find('\'')))};
    }
    options.setup.framework = framework->framework;
    options.setup.frameworkRelease = framework->release;
    options.frameworkNamed = true;
  }
  frontend::ParallelSettings& parallel = config->parallel;
  if (parallel.useParallel.has_value() && !*parallel.useParallel) {
    // use_parallel: False runs every device data parallel, whatever parallel_config says.
    parallel.parallelMode = frontend::ParallelMode::kDataParallel;
    parallel.pipelineStage = 1;
    parallel.autoPipeline = false;
  }
  switch (parallel.parallelMode) {
    case frontend::ParallelMode::kDataParallel:
      fromYaml(options, Setting::kSearch, options.search, search::SearchMode::kDataParallel);
      break;
    case frontend::ParallelMode::kSemiAuto:
      fromYaml(options, Setting::kSearch, options.search, search::SearchMode::kSemiAuto);
      break;
    case frontend::ParallelMode::kAuto:
      fromYaml(options, Setting::kSearch, options.search,
               parallel.searchMode == frontend::SearchMode::kShardingPropagation
                   ? search::SearchMode::kShardingPropagation
                   : search::SearchMode::kRecursiveProgramming);
      break;
  }
  // Semi-auto annotates every op; sharding_propagation MindFormers' key operators.
  if (frontend::shardsByLayout(parallel) && !options.given(Setting::kTp)) {
    options.modelOptions.parallel =
        ir::ParallelConfig{.tp = parallel.modelParallel, .dp = parallel.dataParallel};
    options.modelOptions.dataParallelFromDevices = false;
  }
  fromYaml(options, Setting::kMemCoeff, options.memCoeff, parallel.memCoeff);
  fromYaml(options, Setting::kMemCoeff, options.memCoeffRule, parallel.memCoeffRule);
  applyYamlFeatures(parallel, options);
  if (options.modelOptions.parallel && options.modelOptions.dataParallelFromDevices) {
    // --tp without --dp: the devices of a stage that tp leaves.
    options.modelOptions.parallel->dp =
        dataParallelDegree(options.modelOptions, numDevices / options.setup.pp);
  }
  // Flags win over the yaml: its batch formula reads the degrees they give, as if it held them.
  if (options.modelOptions.parallel && options.given(Setting::kTp)) {
    parallel.modelParallel = options.modelOptions.parallel->tp;
    parallel.dataParallel = options.modelOptions.parallel->dp;
  }
  const auto stages = static_cast<int>(options.setup.pp);
  if (options.given(Setting::kPipelineStages)) parallel.pipelineStage = stages;
  if (numDevices % stages != 0) {
    const std::string where = options.given(Setting::kPipelineStages)
                                  ? ir::flag(Setting::kPipelineStages)
                                  : options.config + ": parallel_config.pipeline_stage";
    return Error{fmt::format("{}: {} stages do not split {} devices", where, stages, numDevices)};
  }
  if (auto status = applyYamlBatch(*config, numDevices, stages, options); !status) {
    return status.error();
  }
  if (config->model) {
    options.modelOptions.transformer = config->model;
    if (options.model.empty()) options.model = config->model->name;
  } else if (auto preset = frontend::transformerPreset(options.model)) {
    // A preset named by --model runs on its family's MindFormers code as the yaml's model would.
    frontend::applyMindFormersVocabSplits(
        *preset, frontend::mindformersFamily(config->archType, options.model), parallel.vocabEmbDp);
    options.modelOptions.transformer = std::move(*preset);
  }
  if (options.modelOptions.transformer && parallel.parallelMode == frontend::ParallelMode::kAuto) {
    options.modelOptions.transformer->annotated =
        frontend::TransformerConfig::Annotated::kMindFormersKeyOps;
  }
  if (options.model.empty()) {
    return Error{fmt::format("{}: model.model_config: missing; give the model there or with {}",
                             options.config, ir::flag(Setting::kModel))};
  }
  options.configNote = configSummary(options, *config, numDevices);
  if (config->maxDeviceMemoryBytes) {
    options.deviceMemoryCapBytes = *config->maxDeviceMemoryBytes;
    options.configNote +=
        fmt::format("\ncontext.max_device_memory: MindSpore may use {} of each device",
                    formatBytes(*config->maxDeviceMemoryBytes));
  }
  return config;
}

void capDeviceMemory(const PlanOptions& options, cluster::Cluster& cluster) {
  if (options.deviceMemoryCapBytes <= 0) return;
  cluster.device.memoryBytes = std::min(cluster.device.memoryBytes, options.deviceMemoryCapBytes);
}

void applyAutoPipeline(PlanOptions& options, const frontend::MindFormersConfig& config,
                       const cluster::Cluster& cluster) {
  if (options.given(Setting::kPipelineStages)) return;  // the flag wins over auto_pipeline
  auto [stages, how] = choosePipelineStages(options, config, cluster);
  if (config.parallel.autoPipeline) {
    options.setup.pp = stages;
    if (frontend::shardsByLayout(config.parallel)) {
      options.modelOptions.parallel->dp =
          cluster.numDevices / stages / options.modelOptions.parallel->tp;
    }
    (void)applyYamlBatch(config, cluster.numDevices, stages, options);
    frontend::MindFormersConfig chosen = config;
    chosen.parallel.pipelineStage = stages;
    options.configNote = configSummary(options, chosen, cluster.numDevices);
    options.configNote += fmt::format("\nauto_pipeline: {} stage(s), {}", stages, how);
  } else if (stages != options.setup.pp) {
    options.configNote +=
        fmt::format("\npipeline_stage {} as configured; auto_pipeline would choose {} ({})",
                    options.setup.pp, stages, how);
  }
}

}  // namespace autopar::planner
