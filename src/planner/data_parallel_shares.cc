#include "planner/data_parallel_shares.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "frontend/graph_json.h"
#include "ir/setting.h"
#include "plan/plan_json.h"
#include "planner/training_options.h"
#include "util/limits.h"

namespace autopar::planner {

namespace {

using ir::Setting;

/// Why the plan cannot take shares (an export that cannot say them, a plan without replicas);
/// empty when it can.
std::string sharesUnsupported(const PlanOptions& options) {
  if (!options.modelOptions.parallel) {
    return fmt::format(
        "needs a Megatron-style plan ({}), whose data-parallel replicas it shares "
        "the batch among",
        ir::flag(Setting::kTp));
  }
  if (!options.megatronArgsOut.empty() || !options.mindsporeStrategyOut.empty()) {
    return fmt::format(
        "no framework runs data-parallel replicas on uneven shares of the batch, "
        "so {} cannot be written",
        options.megatronArgsOut.empty() ? ir::flag(Setting::kMindsporeStrategy)
                                        : std::string("--megatron-args"));
  }
  if (options.given(Setting::kMicroBatch)) {
    return fmt::format(
        "sets each replica's micro-batch (its share over {}); {} cannot be given "
        "with it",
        ir::flag(Setting::kMicroBatches), ir::flag(Setting::kMicroBatch));
  }
  return {};
}

}  // namespace

Expected<std::optional<SharedBatch>> applyShares(PlanOptions& options,
                                                 const cluster::Cluster& cluster) {
  const std::vector<int64_t>& shares = options.training.dpShares;
  if (shares.empty()) return std::optional<SharedBatch>();
  const std::string given =
      fmt::format("{} {}", ir::flag(Setting::kDpShares), fmt::join(shares, ","));
  if (const std::string why = sharesUnsupported(options); !why.empty()) {
    return Error{fmt::format("{}: {}", given, why)};
  }
  auto pipeline = pipelineConfig(options.setup, options.training, cluster.numDevices);
  if (!pipeline) return pipeline.error();
  const int64_t stageDevices = cluster.numDevices / pipeline->stages;
  const ir::ParallelConfig& parallel = *options.modelOptions.parallel;
  const int64_t replicas = dataParallelDegree(options.modelOptions, stageDevices);
  if (static_cast<int64_t>(shares.size()) != replicas) {
    return Error{
        fmt::format("{}: {} shares, expected one for each of the {} data-parallel replicas", given,
                    shares.size(), replicas)};
  }
  if (const int64_t used = parallel.tp * parallel.cp * replicas; used != stageDevices) {
    return Error{fmt::format(
        "{}: TP {} x CP {} x DP {} uses {} of a stage's {} devices; shares need every device in a "
        "replica",
        given, parallel.tp, parallel.cp, replicas, used, stageDevices)};
  }
  const int64_t micro = pipeline->microBatches;
  SharedBatch shared{shares, 0, 0, 0};
  for (int64_t share : shares) {
    if (share < 1 || share % micro != 0 || share > limits::kMaxGlobalBatch) {
      return Error{fmt::format(
          "{}: a share of {}; expected whole samples in each of the {} micro-batches ({}), at "
          "most {}",
          given, share, micro, ir::flag(Setting::kMicroBatches, micro), limits::kMaxGlobalBatch)};
    }
    shared.samples += share;
    shared.graphBatch += share / micro;
    shared.widest = std::max(shared.widest, share / micro);
  }
  // The plan's layouts cut the batch evenly (each a divisor of its dims) before the runtime
  // moves the blocks' bounds to the shares, so the batch must divide by the replicas.
  if (shared.graphBatch % replicas != 0) {
    return Error{fmt::format(
        "{}: the {} samples of each micro-batch do not divide by the {} replicas; the layouts cut "
        "the batch evenly before the shares move its bounds",
        given, shared.graphBatch, replicas)};
  }
  if (shared.samples > limits::kMaxGlobalBatch) {
    return Error{fmt::format("{}: {} samples a step, above the limit of {}", given, shared.samples,
                             limits::kMaxGlobalBatch)};
  }
  options.modelOptions.microBatch = shared.widest;
  return std::optional<SharedBatch>(std::move(shared));
}

Status recordShares(plan::Plan& plan, const SharedBatch& shared, const PlanOptions& options,
                    const cluster::Cluster& cluster) {
  ModelOptions whole = options.modelOptions;
  whole.graphBatch = shared.graphBatch;
  auto model = loadPlannedModel(options, cluster, whole);
  if (!model) return model.error();
  if (auto status = applyTrainingFlags(options.setup, options.training, model->graph); !status) {
    return status;
  }
  plan.inputs.modelHash = plan::fingerprint(frontend::graphToJson(model->graph).dump());
  plan.dataParallelShares = shared.shares;
  // The estimate priced every replica at the widest share: the step is that replica's, but the
  // samples trained are the shares'.
  const int64_t samples = shared.samples;
  plan::EstimateRecord& estimate = plan.estimate;
  if (estimate.samplesPerStep > 0) {
    const double trained = static_cast<double>(samples) / estimate.samplesPerStep;
    estimate.tokensPerSecond *= trained;
    estimate.tflopsPerDevice *= trained;
    estimate.mfu *= trained;
    estimate.samplesPerStep = samples;
  }
  if (plan.setup) plan.setup->gbs = samples;
  return {};
}

}  // namespace autopar::planner
