#include "planner/configuration/configuration_estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "cost/compute.h"
#include "cost/constants.h"
#include "cost/framework.h"
#include "cost/memory.h"
#include "ir/setting.h"
#include "util/limits.h"

namespace autopar::planner {

using ir::flag;
using Setting = ir::Setting;

namespace {

/// "--tp 8 x --pp 4 x --dp 2", with " x --cp 2" when asked.
std::string degreesOf(const MegatronConfig& config, bool withCp) {
  std::string degrees = fmt::format("{} x {} x {}", flag(Setting::kTp, config.tp),
                                    flag(Setting::kPp, config.pp), flag(Setting::kDp, config.dp));
  if (withCp) degrees += " x " + flag(Setting::kCp, config.cp);
  return degrees;
}

Status checkConfig(const MegatronConfig& config) {
  if (config.model.empty()) return Error{flag(Setting::kModel) + ": required"};
  for (const auto& [setting, value] : {std::pair<Setting, int64_t>{Setting::kTp, config.tp},
                                       {Setting::kPp, config.pp},
                                       {Setting::kVpp, config.vpp},
                                       {Setting::kMbs, config.mbs}}) {
    if (value < 1) return Error{flag(setting, value) + ": expected a positive integer"};
  }
  if (config.dp <= 0) return Error{flag(Setting::kDp) + ": required, a positive integer"};
  if (config.gbs <= 0) return Error{flag(Setting::kGbs) + ": required, a positive integer"};
  if (config.cp < 1) return Error{flag(Setting::kCp, config.cp) + ": expected a positive integer"};
  if (config.ep < 1) return Error{flag(Setting::kEp, config.ep) + ": expected a positive integer"};
  // Each degree is bounded; their product could still overflow before anything is sized.
  const double devices = static_cast<double>(config.tp) * static_cast<double>(config.pp) *
                         static_cast<double>(config.dp) * static_cast<double>(config.cp);
  if (devices > static_cast<double>(limits::kMaxDevices)) {
    return Error{fmt::format("{} = {:g} devices is above the limit {} (docs/limits.md)",
                             degreesOf(config, true), devices, limits::kMaxDevices)};
  }
  if (config.ep > 1 && config.tp > 1 && !config.sequenceParallel) {
    return Error{fmt::format(
        "{}: with {} needs {} (Megatron-Core requires it for expert parallelism with tensor "
        "parallelism)",
        flag(Setting::kEp, config.ep), flag(Setting::kTp, config.tp),
        flag(Setting::kSequenceParallel))};
  }
  if (config.gbs % (config.dp * config.mbs) != 0) {
    return Error{fmt::format("{}: not divisible by {} x {} = {}", flag(Setting::kGbs, config.gbs),
                             flag(Setting::kDp, config.dp), flag(Setting::kMbs, config.mbs),
                             config.dp * config.mbs)};
  }
  if (config.framework == cost::Framework::kMindSpore && config.pp > 1 &&
      config.microBatches() < config.pp) {
    return Error{fmt::format(
        "{} / ({} x {}) = {} micro-batches, fewer than the {} pipeline stages; MindSpore needs at "
        "least one micro-batch per stage (micro_size >= stages)",
        flag(Setting::kGbs, config.gbs), flag(Setting::kDp, config.dp),
        flag(Setting::kMbs, config.mbs), config.microBatches(), config.pp)};
  }
  if (config.zero < 0 || config.zero > 3) {
    return Error{flag(Setting::kZero, config.zero) + ": expected 0, 1, 2 or 3"};
  }
  if ((config.vpp > 1) != (config.schedule == ir::Schedule::kInterleaved)) {
    return Error{
        fmt::format("{}: the interleaved schedule runs, and only it runs, more than "
                    "one model chunk per stage (schedule {})",
                    flag(Setting::kVpp, config.vpp), ir::scheduleName(config.schedule))};
  }
  if (config.schedule == ir::Schedule::kGPipe) {
    return Error{"schedule gpipe: Megatron-LM runs 1F1B, interleaved 1F1B or zero-bubble H1"};
  }
  if (config.zeroBubble() && (config.pp < 2 || config.vpp > 1)) {
    return Error{fmt::format("{}: needs {} greater than 1 and {}", flag(Setting::kZeroBubble),
                             flag(Setting::kPp), flag(Setting::kVpp, 1))};
  }
  if (auto runnable = cost::checkRunnable(cost::frameworkProfile(config.framework), config,
                                          config.precision, config.frameworkRelease);
      !runnable) {
    return runnable.error();
  }
  if (config.sequenceParallel && config.tp == 1) {
    return Error{flag(Setting::kSequenceParallel) + ": needs " + flag(Setting::kTp) +
                 " greater than 1"};
  }
  if (config.codePath.gradReduceInBf16 && config.precision == "fp16") {
    return Error{fmt::format("{}: needs {} bf16 or fp8 (fp16 gradients are fp16)",
                             cost::switchFlag(&ir::CodePath::gradReduceInBf16),
                             flag(Setting::kPrecision))};
  }
  if (config.fp8ParamGather && config.precision != "fp8") {
    return Error{flag(Setting::kFp8ParamGather) + ": needs " + flag(Setting::kPrecision, "fp8")};
  }
  return {};
}

/// "1, 2, 4 or 8": the expert-parallel degrees dividing both the experts and --dp.
std::string fittingExpertDegrees(int64_t experts, int64_t dp) {
  std::vector<std::string> degrees;
  for (int64_t ep = 1; ep <= std::min(experts, dp); ++ep) {
    if (experts % ep == 0 && dp % ep == 0) degrees.push_back(std::to_string(ep));
  }
  if (degrees.size() == 1) return degrees.front();
  const std::string last = degrees.back();
  degrees.pop_back();
  return fmt::format("{} or {}", fmt::join(degrees, ", "), last);
}

}  // namespace

Status checkExpertParallel(const MegatronConfig& config,
                           const frontend::TransformerConfig& transformer) {
  if (config.ep == 1) return {};
  if (transformer.experts == 0) {
    return Error{fmt::format("{}: {} has no experts (a dense model); only {} fits",
                             flag(Setting::kEp, config.ep), config.model, flag(Setting::kEp, 1))};
  }
  const std::string fitting = fittingExpertDegrees(transformer.experts, config.dp);
  if (transformer.experts % config.ep != 0) {
    return Error{fmt::format("{}: does not divide the {} experts; {} would",
                             flag(Setting::kEp, config.ep), transformer.experts,
                             flag(Setting::kEp, fitting))};
  }
  if (config.dp % config.ep != 0) {
    return Error{fmt::format(
        "{}: does not divide {} (expert parallelism is carved out of the "
        "data-parallel ranks); {} would",
        flag(Setting::kEp, config.ep), flag(Setting::kDp, config.dp), flag(Setting::kEp, fitting))};
  }
  return {};
}

Expected<cluster::Cluster> clusterFor(const MegatronConfig& config) {
  int nodes = config.nodes;
  if (nodes <= 0) {
    auto one = loadCluster(config.cluster, 1, 0, config.devicesPerNode);
    if (!one) return one.error();
    nodes = static_cast<int>((config.worldSize() + one->numDevices - 1) / one->numDevices);
  }
  auto cluster = loadCluster(config.cluster, nodes, 0, config.devicesPerNode);
  if (!cluster) return cluster.error();
  if (cluster->numDevices < config.worldSize()) {
    return Error{fmt::format("{} = {} devices, but the cluster has {} ({} nodes)",
                             degreesOf(config, false), config.worldSize(), cluster->numDevices,
                             nodes)};
  }
  if (config.interNodeGbps > 0) {
    // Every level wider than a node carries the inter-node network.
    for (auto& level : cluster->levels) {
      if (level.domainSize > cluster->devicesPerNode)
        level.bytesPerSecond = config.interNodeGbps * 1e9 / 8;
    }
  }
  if (cluster->numDevices == config.worldSize()) return cluster;
  if (config.nodes > 0 && !config.allowIdle) {
    const int64_t idle = cluster->numDevices - config.worldSize();
    const int64_t perReplica = config.worldSize() / config.dp;
    const std::string fill =
        cluster->numDevices % perReplica == 0
            ? flag(Setting::kDp, cluster->numDevices / perReplica) + " uses them all"
            : fmt::format("a {}, {} or {} that uses them all", flag(Setting::kDp),
                          flag(Setting::kTp), flag(Setting::kPp));
    return Error{fmt::format(
        "{} = {} devices leave {} of the {} devices of {} nodes idle; {}, fewer {} fit it, or "
        "{} plans it on {} devices",
        degreesOf(config, true), config.worldSize(), idle, cluster->numDevices, nodes, fill,
        flag(Setting::kNodes), flag(Setting::kAllowIdle), config.worldSize())};
  }
  auto taken = cluster::takeDevices(*cluster, static_cast<int>(config.worldSize()));
  // Nodes given and devices left idle on purpose (--allow-idle): the reports say so.
  if (taken && config.nodes > 0) {
    taken->name = fmt::format("{}, {} of its {} devices ({} idle: --allow-idle)", cluster->name,
                              config.worldSize(), cluster->numDevices,
                              cluster->numDevices - config.worldSize());
  }
  return taken;
}

int64_t gradientBucketBytes(const MegatronConfig& config) {
  if (!config.codePath.overlapGradReduce) return 0;
  const double elements = std::max(4e7, 1e6 * static_cast<double>(config.dp * config.cp));
  const int64_t accumulator =
      cost::optimizerSpecOf(config).accumulatorBytes(ir::dtypeBytes(ir::DType::kBF16));
  return static_cast<int64_t>(elements * static_cast<double>(accumulator));
}

int64_t runtimeReserveBytes(const ir::ParallelConfig& config, int64_t transientBytes,
                            const cost::CostConstants& constants) {
  int groups = 0;
  for (int64_t degree : {config.tp, config.pp, config.dp, config.cp, config.ep}) {
    groups += degree > 1 ? 1 : 0;
  }
  return static_cast<int64_t>(constants.cudaContextBytes + groups * constants.ncclGroupBytes +
                              constants.allocatorReserve * static_cast<double>(transientBytes));
}

namespace {

PlanOptions planOptions(const MegatronConfig& config, ir::DType dtype) {
  PlanOptions options;
  options.model = config.model;
  options.cluster = config.cluster;
  options.costModel = config.costModel;
  options.modelOptions.microBatch = config.mbs;
  options.modelOptions.sequence = config.seq;
  options.modelOptions.parallel = static_cast<const ir::ParallelConfig&>(config);
  // Megatron-Core's token dispatcher moves tokens to their experts' ranks with all-to-all.
  options.enableAllToAll = config.ep > 1;
  options.modelOptions.dtype = dtype;
  options.modelOptions.attention = config.codePath.attention;
  options.modelOptions.loss = config.codePath.loss;
  options.setup = config;
  // Transformer Engine's userbuffers overlap the tensor-parallel collectives of sequence
  // parallelism; without TP or SP there are none to overlap (Megatron-Bridge's CommOverlapConfig
  // turns tp_comm_overlap off then).
  options.setup.codePath.tpCommOverlap =
      config.codePath.tpCommOverlap && config.tp > 1 && config.sequenceParallel;
  options.modelOptions.transformer = config.transformer;
  auto& training = options.training;
  training.microBatches = static_cast<int>(config.microBatches());
  // A global batch too small to fill the pipeline still runs under the Megatron-style
  // frameworks (the stages idle through the rest of the fill); MindSpore refuses it.
  training.fewerMicroBatchesThanStages = config.framework != cost::Framework::kMindSpore;
  training.bucketing = cost::Bucketing::kBySize;
  const int64_t bucket = gradientBucketBytes(config);
  training.bucketMb = bucket > 0 ? static_cast<double>(bucket) / (1024.0 * 1024.0)
                                 : 1e9;  // 1 PiB: one bucket holds any model's gradients
  // The ZeRO stage as MindSpore's optimizer-parallel features; evaluateOptions adds what
  // Megatron's distributed optimizer and FSDP do beyond them.
  const int zero = config.zeroAsRun();
  if (zero > 0) {
    training.optimizerParallel = true;
    training.gradientAccumulationShard = zero >= 2;
  }
  // Under MindSpore that is all: its optimizer parallel as the run yaml turns it on
  // (exporters::mindformersRunYaml), parameters stored as slices above its threshold and
  // gathered for every micro-batch.
  if (zero > 0 && !cost::frameworkProfile(config.framework).can.zeroAsOptimizerParallel) {
    // Megatron's distributed optimizer shards every parameter's state, however small.
    training.optimizerThresholdKb = 0;
    training.groupUpdate = zero < 3;
    // ZeRO-3 frees a gathered parameter after every use and gathers it again.
    training.parallelOptimizerCommRecompute = zero == 3;
  }
  return options;
}

}  // namespace

Expected<frontend::TransformerConfig> transformerOf(const MegatronConfig& config) {
  if (config.transformer) return *config.transformer;
  return transformerConfigOf(config.model);
}

Expected<ir::DType> parsePrecision(const std::string& name) {
  if (name == "bf16") return ir::DType::kBF16;
  if (name == "fp16") return ir::DType::kF16;
  if (name == "fp8") return ir::DType::kFP8;
  return Error{flag(Setting::kPrecision, name) + ": expected bf16, fp16 or fp8"};
}

int64_t usableMemoryBytes(const cluster::Cluster& cluster, int64_t marginBytes) {
  return cluster.device.memoryBytes - marginBytes;
}

size_t ConfigEstimate::fullestStage() const {
  return static_cast<size_t>(std::max_element(peakMemoryBytes.begin(), peakMemoryBytes.end()) -
                             peakMemoryBytes.begin());
}

int64_t ConfigEstimate::peakBytes() const { return peakMemoryBytes[fullestStage()]; }

bool ConfigEstimate::fits() const {
  const int64_t usable = usableMemoryBytes(cluster, memoryMarginBytes);
  for (size_t s = 0; s < peakMemoryBytes.size(); ++s) {
    const MemoryBand band =
        s < peakBands.size() ? peakBands[s] : MemoryBand{peakMemoryBytes[s], peakMemoryBytes[s]};
    if (!fitsUnder(memoryPolicy, peakMemoryBytes[s], band, usable)) return false;
  }
  return true;
}

MemoryVerdict ConfigEstimate::verdict() const {
  const int64_t usable = usableMemoryBytes(cluster, memoryMarginBytes);
  MemoryVerdict worst = MemoryVerdict::kFits;
  for (const MemoryBand& band : peakBands) worst = std::max(worst, band.against(usable));
  return worst;
}

Expected<std::pair<search::StackCounts, search::StackCounts>> placementOf(
    const GivenPlacement& given, const MegatronConfig& config,
    const frontend::TransformerConfig& transformer) {
  if (given.llmLayers.empty() && given.vitLayers.empty()) {
    if (!given.llmRecompute.empty() || !given.vitRecompute.empty()) {
      return Error{fmt::format("{}/{}: need {} (a placement)", flag(Setting::kLlmRecompute),
                               flag(Setting::kVitRecompute), flag(Setting::kLlmLayers))};
    }
    return std::pair<search::StackCounts, search::StackCounts>{};
  }
  // Interleaved: one count per virtual stage, chunk c of stage s at c PP + s.
  const auto stages = static_cast<size_t>(config.pp * config.vpp);
  const bool vision = transformer.vision.layers > 0;
  if (config.vpp > 1 && vision) {
    return Error{flag(Setting::kVitLayers) + ": a vision tower is not interleaved; give " +
                 flag(Setting::kVpp, 1)};
  }
  struct Stack {
    Setting setting;
    const std::vector<int64_t>* layers;
    const std::vector<int64_t>* recompute;
    int64_t total;
  };
  std::vector<Stack> stacks;
  if (vision) {
    stacks.push_back(
        {Setting::kVitLayers, &given.vitLayers, &given.vitRecompute, transformer.vision.layers});
  } else if (!given.vitLayers.empty()) {
    return Error{flag(Setting::kVitLayers) + ": the model has no vision tower"};
  }
  stacks.push_back(
      {Setting::kLlmLayers, &given.llmLayers, &given.llmRecompute, transformer.layers});
  search::StackCounts layers;
  search::StackCounts recomputed;
  for (const Stack& stack : stacks) {
    const std::vector<int64_t> zeros(stages, 0);
    const std::vector<int64_t>& counts = stack.layers->empty() ? zeros : *stack.layers;
    std::vector<int64_t> recompute = stack.recompute->empty() ? zeros : *stack.recompute;
    // Seed 003's layer_recompute leaves out the last stage's count (export/mindspeed_json.h).
    if (config.vpp <= 1 && recompute.size() + 1 == stages) recompute.push_back(0);
    if (counts.size() != stages || recompute.size() != stages) {
      return Error{fmt::format(
          "{}: expected {} counts (one per {})", flag(stack.setting), stages,
          config.vpp > 1
              ? fmt::format("virtual stage: {} x {}", flag(Setting::kPp), flag(Setting::kVpp))
              : flag(Setting::kPp) + " stage; recompute may leave out the last")};
    }
    int64_t sum = 0;
    for (size_t s = 0; s < stages; ++s) {
      if (counts[s] < 0 || recompute[s] < 0 || recompute[s] > counts[s]) {
        return Error{fmt::format("{}: stage {} has {} layers and {} recomputed",
                                 flag(stack.setting), s, counts[s], recompute[s])};
      }
      sum += counts[s];
    }
    if (sum != stack.total) {
      return Error{fmt::format("{}: {} layers placed, the model has {}", flag(stack.setting), sum,
                               stack.total)};
    }
    layers.push_back(counts);
    recomputed.push_back(recompute);
  }
  return std::pair{std::move(layers), std::move(recomputed)};
}

StageLayers layersPerStage(const ConfigEstimate& estimate, int64_t stages, std::string_view stack) {
  StageLayers result{std::vector<int64_t>(static_cast<size_t>(stages), 0),
                     std::vector<int64_t>(static_cast<size_t>(stages), 0)};
  const ir::Graph& graph = estimate.evaluated.model.graph;
  const auto& stageOf = estimate.evaluated.stages.virtualStageOf;
  const bool allRecomputed =
      estimate.evaluated.evaluateOptions.recompute.layers == ir::Recompute::kFull;
  std::set<std::string> seen;
  for (const ir::Op& op : graph.ops()) {
    if (!ir::isStackLayer(op.block) || !op.block.starts_with(fmt::format("{}.", stack)) ||
        !seen.insert(op.block).second) {
      continue;
    }
    const auto stage = static_cast<size_t>(stageOf.at(static_cast<size_t>(op.id)) % stages);
    ++result.layers[stage];
    if (allRecomputed || graph.settingsOf(op).recompute) ++result.recomputed[stage];
  }
  return result;
}

std::vector<int64_t> layersPerVirtualStage(const ConfigEstimate& estimate, std::string_view stack) {
  const auto& stages = estimate.evaluated.stages;
  std::vector<int64_t> layers(static_cast<size_t>(stages.stages * stages.virtualStages), 0);
  const ir::Graph& graph = estimate.evaluated.model.graph;
  std::set<std::string> seen;
  for (const ir::Op& op : graph.ops()) {
    if (!ir::isStackLayer(op.block) || !op.block.starts_with(fmt::format("{}.", stack)) ||
        !seen.insert(op.block).second) {
      continue;
    }
    ++layers.at(static_cast<size_t>(stages.virtualStageOf.at(static_cast<size_t>(op.id))));
  }
  return layers;
}

namespace {

/// The configuration's blocks sharded by its op-level search on the TP x CP submesh, evaluated on
/// the full model; nullopt under Megatron's annotation or expert parallelism (the op search
/// does not place experts).
Expected<std::optional<Evaluated>> evaluateOpSearch(const MegatronConfig& config,
                                                    const PlanOptions& megatron,
                                                    const cluster::Cluster& cluster,
                                                    ir::DType dtype) {
  if (config.opSearch == OpSearch::kMegatron || config.ep > 1) {
    return std::optional<Evaluated>();
  }
  std::shared_ptr<BlockShardingOracle> oracle = config.blockOracle;
  if (!oracle) {
    auto transformer = transformerOf(config);
    if (!transformer) return transformer.error();
    transformer->dtype = dtype;
    transformer->attention = config.codePath.attention;
    oracle =
        std::make_shared<BlockShardingOracle>(std::move(*transformer), cluster, config.costModel);
  }
  auto blocks = oracle->shard({config.opSearch, config.tp, config.cp, config.mbs, config.seq});
  if (!blocks) return blocks.error();
  PlanOptions options = megatron;
  options.modelOptions.annotate = false;
  options.blockSharding = std::move(*blocks);
  auto evaluated = evaluate(options, cluster, options.modelOptions);
  if (!evaluated) return evaluated.error();
  return std::optional<Evaluated>(std::move(*evaluated));
}

/// What every evaluation of a configuration shares: the configuration checked, its dtype, its
/// cluster and the plan options it maps to.
struct Prepared {
  ir::DType dtype = ir::DType::kBF16;
  cluster::Cluster cluster;
  PlanOptions options;
};

Expected<Prepared> prepare(const MegatronConfig& config) {
  if (auto status = checkConfig(config); !status) return status.error();
  if (config.ep != 1) {
    auto transformer = transformerOf(config);
    if (!transformer) return transformer.error();
    if (auto status = checkExpertParallel(config, *transformer); !status) return status.error();
  }
  auto dtype = parsePrecision(config.precision);
  if (!dtype) return dtype.error();
  auto cluster = clusterFor(config);
  if (!cluster) return cluster.error();
  PlanOptions options = planOptions(config, *dtype);
  return Prepared{*dtype, std::move(*cluster), std::move(options)};
}

/// The estimate of an evaluation: step, throughput, FLOP/s, MFU and peak memory per stage.
ConfigEstimate estimateOf(const MegatronConfig& config, Prepared prepared, Evaluated evaluated) {
  ConfigEstimate result;
  result.evaluated = std::move(evaluated);
  result.cluster = std::move(prepared.cluster);
  result.worldSize = config.worldSize();
  result.microBatches = prepared.options.training.microBatches;
  result.sequence = result.evaluated.model.sequence;
  result.stepSeconds = result.evaluated.estimate.stepSeconds;
  const auto [forward, recomputed] =
      forwardFlops(result.evaluated.model.graph, result.evaluated.report.recomputeRegionOf);
  // The graph holds one micro-batch of every data-parallel replica.
  const auto micro = static_cast<double>(result.microBatches);
  result.modelFlopsPerStep = 3 * forward * micro;
  result.hardwareFlopsPerStep = (3 * forward + recomputed) * micro;
  const double gpuSeconds = result.stepSeconds * static_cast<double>(result.worldSize);
  result.tokensPerSecond = static_cast<double>(config.gbs * result.sequence) / result.stepSeconds;
  result.tflopsPerGpu = result.modelFlopsPerStep / gpuSeconds / 1e12;
  result.hardwareTflopsPerGpu = result.hardwareFlopsPerStep / gpuSeconds / 1e12;
  // The same peak the cost model computes with.
  const double peak = cost::peakFlops(result.cluster.device, *cost::precisionOf(prepared.dtype));
  if (peak > 0) result.mfu = result.tflopsPerGpu * 1e12 / peak;
  const cost::CostConstants& constants = *config.costModel;
  for (auto& stage : result.evaluated.estimate.stages) {
    const cost::MemoryBreakdown& memory = stage.memory;
    const int64_t transient =
        transientStageBytes(config.codePath, memory.total(), memory.parameterBytes,
                            memory.gradientBytes, memory.optimizerBytes);
    stage.memory.runtimeBytes = runtimeReserveBytes(config, transient, constants);
    result.peakMemoryBytes.push_back(stage.memory.total());
    result.transientBytes.push_back(bandedBytes(stage.memory, config.codePath, constants));
    result.peakBands.push_back(
        memoryBand(stage.memory.total(), result.transientBytes.back(), constants));
  }
  result.memoryMarginBytes = config.memoryMarginBytes;
  result.memoryPolicy = config.memoryPolicy;
  return result;
}

}  // namespace

bool prefersOpSearch(bool fits, double seconds, bool megatronFits, double megatronSeconds) {
  if (fits != megatronFits) return fits;
  return seconds < megatronSeconds;
}

Expected<ConfigEstimate> estimateConfig(const MegatronConfig& config) {
  auto prepared = prepare(config);
  if (!prepared) return prepared.error();
  const int64_t deviceBytes = prepared->cluster.device.memoryBytes;
  auto megatron = evaluate(prepared->options, prepared->cluster, prepared->options.modelOptions);
  if (!megatron) return megatron.error();
  const double megatronSeconds = megatron->estimate.stepSeconds;
  auto searched = evaluateOpSearch(config, prepared->options, prepared->cluster, prepared->dtype);
  if (!searched) return searched.error();
  const double searchedSeconds = *searched ? (*searched)->estimate.stepSeconds : 0;
  const bool taken =
      *searched && prefersOpSearch((*searched)->peakBytes() <= deviceBytes, searchedSeconds,
                                   megatron->peakBytes() <= deviceBytes, megatronSeconds);
  ConfigEstimate result = estimateOf(config, std::move(*prepared),
                                     taken ? std::move(**searched) : std::move(*megatron));
  result.opSearchTaken = taken;
  result.megatronStepSeconds = megatronSeconds;
  result.opSearchStepSeconds = searchedSeconds;
  return result;
}

Expected<std::optional<ConfigEstimate>> estimateOpSearchSharding(const MegatronConfig& config) {
  auto prepared = prepare(config);
  if (!prepared) return prepared.error();
  auto searched = evaluateOpSearch(config, prepared->options, prepared->cluster, prepared->dtype);
  if (!searched) return searched.error();
  if (!*searched) return std::optional<ConfigEstimate>();
  ConfigEstimate result = estimateOf(config, std::move(*prepared), std::move(**searched));
  result.opSearchTaken = true;
  result.opSearchStepSeconds = result.stepSeconds;
  return std::optional<ConfigEstimate>(std::move(result));
}

}  // namespace autopar::planner
