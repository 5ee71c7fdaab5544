#include "plan/plan_json.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace autopar::plan {

using OrderedJson = nlohmann::ordered_json;

namespace {

OrderedJson layoutToJson(const LayoutRecord& layout) {
  return OrderedJson{{"tensor", layout.tensor},
                     {"device_matrix", layout.deviceMatrix},
                     {"dim_axes", layout.dimAxes},
                     {"tensor_map", layout.tensorMap},
                     {"partial_axes", layout.partialAxes}};
}

OrderedJson opToJson(const OpRecord& op) {
  OrderedJson inputs = OrderedJson::array();
  for (const auto& layout : op.inputs) inputs.push_back(layoutToJson(layout));
  OrderedJson outputs = OrderedJson::array();
  for (const auto& layout : op.outputs) outputs.push_back(layoutToJson(layout));
  return OrderedJson{{"name", op.name},
                     {"kind", op.kind},
                     {"block", op.block},
                     {"strategy", op.strategy},
                     {"strategy_source", op.strategySource},
                     {"device_matrix", op.deviceMatrix},
                     {"inputs", inputs},
                     {"outputs", outputs},
                     {"forward_s", op.forwardSeconds},
                     {"backward_s", op.backwardSeconds},
                     {"stage", op.stage},
                     {"chunk", op.chunk},
                     {"recompute", op.recomputed},
                     {"placement", op.placement},
                     {"manual_split", op.manualSplit}};
}

OrderedJson memoryToJson(const ir::MemoryBreakdown& memory) {
  return OrderedJson{{"parameters", memory.parameterBytes},
                     {"gradients", memory.gradientBytes},
                     {"optimizer_states", memory.optimizerBytes},
                     {"activations", memory.activationBytes},
                     {"workspace", memory.workspaceBytes},
                     {"communication_buffers", memory.communicationBytes},
                     {"host", memory.hostBytes}};
}

OrderedJson stageToJson(const StageRecord& stage) {
  const ir::StageEstimate& estimate = stage.estimate;
  return OrderedJson{{"stage", stage.stage},
                     {"blocks", stage.blocks},
                     {"ops", stage.ops},
                     {"forward_s", estimate.forwardSeconds},
                     {"backward_s", estimate.backwardSeconds},
                     {"busy_s", estimate.busySeconds},
                     {"send_s", estimate.sendSeconds},
                     {"peak_in_flight", estimate.peakInFlight},
                     {"exposed_gradient_sync_s", estimate.exposedGradientSyncSeconds},
                     {"optimizer_s", estimate.optimizerSeconds},
                     {"peak_memory_bytes", estimate.memory.total()},
                     {"memory", memoryToJson(estimate.memory)},
                     {"optimizer_parallel_saved_bytes", estimate.optimizerParallelSavedBytes},
                     {"optimizer_parallel_comm_s", estimate.optimizerParallelCommSeconds}};
}

OrderedJson featuresToJson(const Plan& plan) {
  const FeaturesRecord& f = plan.features;
  const ir::PipelineShape& p = plan.pipeline;
  return OrderedJson{{"pipeline",
                      {{"stages", p.stages},
                       {"virtual_stages", p.virtualStages},
                       {"micro_batches", p.microBatches},
                       {"schedule", ir::scheduleName(p.schedule)}}},
                     {"optimizer_parallel",
                      {{"enabled", f.optimizerParallel},
                       {"threshold_kb", f.optimizerThresholdKb},
                       {"gradient_accumulation_shard", f.gradientAccumulationShard},
                       {"group_update", f.optimizerGroupUpdate}}},
                     {"recompute",
                      {{"layers", ir::recomputeName(f.recompute)},
                       {"mp_comm_recompute", f.mpCommRecompute},
                       {"parallel_optimizer_comm_recompute", f.parallelOptimizerCommRecompute},
                       {"slice_activation", f.recomputeSliceActivation}}},
                     {"fusion", {{"bucketing", f.bucketing}, {"bucket_bytes", f.bucketBytes}}},
                     {"enable_alltoall", f.enableAllToAll}};
}

/// A yaml value as the yaml would type it: True/False a bool, digits a number, else a string.
OrderedJson yamlValue(const std::string& value) {
  if (value == "True" || value == "False") return value == "True";
  char* end = nullptr;
  const long long integer = std::strtoll(value.c_str(), &end, 10);
  if (!value.empty() && *end == '\0') return integer;
  const double number = std::strtod(value.c_str(), &end);
  if (!value.empty() && *end == '\0') return number;
  return value;
}

OrderedJson fixesToJson(const std::vector<FixRecord>& fixes) {
  OrderedJson out = OrderedJson::array();
  for (const FixRecord& fix : fixes) {
    OrderedJson yaml = OrderedJson::object();
    for (const auto& [key, value] : fix.yaml) yaml[key] = yamlValue(value);
    out.push_back(OrderedJson{{"flags", fix.flags},
                              {"yaml", yaml},
                              {"step_time_s", fix.stepSeconds},
                              {"samples_per_step", fix.samplesPerStep},
                              {"peak_memory_bytes", fix.peakMemoryBytes}});
  }
  return out;
}

OrderedJson parallelConfigToJson(const ir::ParallelConfig& c) {
  return OrderedJson{{"tp", c.tp},
                     {"dp", c.dp},
                     {"pp", c.pp},
                     {"cp", c.cp},
                     {"ep", c.ep},
                     {"vpp", c.vpp},
                     {"micro_batch_size", c.mbs},
                     {"schedule", ir::scheduleName(c.schedule)},
                     {"sequence_parallel", c.sequenceParallel},
                     {"recompute", ir::recomputeName(c.recompute)},
                     {"zero_stage", c.zero}};
}

OrderedJson parametersToJson(const Plan& plan) {
  OrderedJson list = OrderedJson::array();
  for (const auto& p : plan.parameters) {
    list.push_back(OrderedJson{{"name", p.name},
                               {"optimizer_shards", p.optimizerShards},
                               {"shard_dim", p.shardDim},
                               {"placement", p.placement},
                               {"note", p.note}});
  }
  return list;
}

OrderedJson fusionGroupsToJson(const Plan& plan) {
  OrderedJson list = OrderedJson::array();
  for (const auto& group : plan.fusionGroups) {
    OrderedJson collectives = OrderedJson::array();
    for (const auto& c : group.collectives) {
      collectives.push_back(OrderedJson{{"primitive", c.primitive},
                                        {"gradient", c.gradient},
                                        {"bytes", c.bytes},
                                        {"seconds", c.seconds},
                                        {"unfused_seconds", c.unfusedSeconds}});
    }
    list.push_back(OrderedJson{{"name", group.name},
                               {"stage", group.stage},
                               {"parameters", group.parameters},
                               {"collectives", collectives}});
  }
  return list;
}

OrderedJson redistributionToJson(const RedistributionRecord& record) {
  OrderedJson steps = OrderedJson::array();
  for (const auto& step : record.steps) steps.push_back(stepToJson(step));
  return OrderedJson{{"tensor", record.tensor},
                     {"from_op", record.fromOp},
                     {"to_op", record.toOp},
                     {"direction", record.direction},
                     {"gradient_sync", record.gradientSync},
                     {"seconds", record.seconds},
                     {"bytes_per_device", record.bytesPerDevice},
                     {"steps", steps}};
}

OrderedJson estimateToJson(const EstimateRecord& estimate) {
  OrderedJson stages = OrderedJson::array();
  for (const auto& stage : estimate.stages) stages.push_back(stageToJson(stage));
  return OrderedJson{
      {"step_time_s", estimate.stepTimeSeconds},
      {"samples_per_step", estimate.samplesPerStep},
      {"tokens_per_s", estimate.tokensPerSecond},
      {"tflops_per_device", estimate.tflopsPerDevice},
      {"mfu", estimate.mfu},
      {"compute_s", estimate.computeSeconds},
      {"communication_s", estimate.communicationSeconds},
      {"bubble_s", estimate.bubbleSeconds},
      {"bubble_fraction", estimate.bubbleFraction},
      {"gradient_sync_s", estimate.gradientSyncSeconds},
      {"optimizer_s", estimate.optimizerSeconds},
      {"peak_memory_bytes", estimate.peakMemoryBytes},
      {"device_memory_bytes", estimate.deviceMemoryBytes},
      {"fits", estimate.fits},
      {"memory_band_bytes", {estimate.memoryBandLowBytes, estimate.memoryBandHighBytes}},
      {"memory_verdict", estimate.memoryVerdict},
      {"memory_by_device", estimate.memoryByDevice},
      {"memory", memoryToJson(estimate.memory)},
      {"stages", stages}};
}

}  // namespace

OrderedJson stepToJson(const StepRecord& step) {
  return OrderedJson{{"primitive", step.primitive}, {"device_matrix", step.deviceMatrix},
                     {"axis", step.axis},           {"dim", step.dim},
                     {"split_dim", step.splitDim},  {"bytes_per_device", step.bytesPerDevice},
                     {"seconds", step.seconds},     {"algorithm", step.algorithm}};
}

OrderedJson planToJson(const Plan& plan) {
  OrderedJson ops = OrderedJson::array();
  for (const auto& op : plan.ops) ops.push_back(opToJson(op));
  OrderedJson redistributions = OrderedJson::array();
  for (const auto& record : plan.redistributions) {
    redistributions.push_back(redistributionToJson(record));
  }
  const InputsRecord& inputs = plan.inputs;
  OrderedJson json{{"format", "autopar.plan"},
                   {"version", plan.version},
                   {"search", plan.search},
                   {"devices", plan.devices},
                   {"ranks", plan.ranks},
                   {"inputs",
                    {{"model", inputs.model},
                     {"model_hash", inputs.modelHash},
                     {"cluster", inputs.cluster},
                     {"cluster_hash", inputs.clusterHash},
                     {"micro_batch", inputs.microBatch},
                     {"sequence", inputs.sequence}}},
                   {"ops", ops},
                   {"redistributions", redistributions},
                   {"conflicts", plan.conflicts},
                   {"features", featuresToJson(plan)}};
  if (plan.setup) json["parallel_config"] = parallelConfigToJson(*plan.setup);
  if (!plan.dataParallelShares.empty()) json["data_parallel_shares"] = plan.dataParallelShares;
  json["parameters"] = parametersToJson(plan);
  json["fusion_groups"] = fusionGroupsToJson(plan);
  json["estimate"] = estimateToJson(plan.estimate);
  if (!plan.fixes.empty()) json["fixes"] = fixesToJson(plan.fixes);
  return json;
}

std::string fingerprint(const std::string& text) {
  // FNV-1a, 64-bit (offset basis and prime from the FNV specification).
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace autopar::plan
