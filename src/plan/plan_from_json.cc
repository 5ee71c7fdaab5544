#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "plan/plan_json.h"
#include "util/json_fields.h"
#include "util/text_file.h"

namespace autopar::plan {

namespace {

using Json = nlohmann::json;

/// Reads a list member element by element with `readItem(item, path)`.
template <class T, class ReadItem>
Expected<std::vector<T>> readList(const Json& object, std::string_view key, const std::string& path,
                                  ReadItem readItem) {
  const std::string where = json::childPath(path, key);
  if (!object.contains(key) || !object.at(std::string(key)).is_array()) {
    return Error{where + ": expected a list"};
  }
  std::vector<T> items;
  const Json& list = object.at(std::string(key));
  for (size_t i = 0; i < list.size(); ++i) {
    auto item = readItem(list[i], fmt::format("{}[{}]", where, i));
    if (!item) return item.error();
    items.push_back(std::move(*item));
  }
  return items;
}

Expected<LayoutRecord> readLayout(const Json& object, const std::string& path) {
  LayoutRecord layout;
  auto tensor = json::required<std::string>(object, "tensor", path);
  if (!tensor) return tensor.error();
  auto matrix = json::required<std::vector<int64_t>>(object, "device_matrix", path);
  if (!matrix) return matrix.error();
  auto dimAxes = json::required<std::vector<std::vector<int>>>(object, "dim_axes", path);
  if (!dimAxes) return dimAxes.error();
  auto tensorMap = json::optional<std::vector<int64_t>>(object, "tensor_map", path, {});
  if (!tensorMap) return tensorMap.error();
  auto partial = json::optional<std::vector<int>>(object, "partial_axes", path, {});
  if (!partial) return partial.error();
  return LayoutRecord{*tensor, *matrix, *dimAxes, *tensorMap, *partial};
}

Expected<ParameterRecord> readParameter(const Json& object, const std::string& path) {
  auto name = json::required<std::string>(object, "name", path);
  if (!name) return name.error();
  auto shards = json::optional<int64_t>(object, "optimizer_shards", path, 1);
  if (!shards) return shards.error();
  if (*shards < 1) return Error{path + ".optimizer_shards: expected a positive integer"};
  auto dim = json::optional<int64_t>(object, "shard_dim", path, -1);
  if (!dim) return dim.error();
  auto placement = json::optional<std::string>(object, "placement", path, "device");
  if (!placement) return placement.error();
  auto note = json::optional<std::string>(object, "note", path, "");
  if (!note) return note.error();
  return ParameterRecord{*name, *shards, static_cast<int>(*dim), *placement, *note};
}

/// features.pipeline; the rest of the features is what the estimate used and is not read back.
Expected<PipelineRecord> readPipeline(const Json& features) {
  PipelineRecord pipeline;
  if (!features.contains("pipeline")) return pipeline;
  const Json& object = features.at("pipeline");
  const std::string path = "features.pipeline";
  auto stages = json::optional<int64_t>(object, "stages", path, 1);
  if (!stages) return stages.error();
  auto virtualStages = json::optional<int64_t>(object, "virtual_stages", path, 1);
  if (!virtualStages) return virtualStages.error();
  auto microBatches = json::optional<int64_t>(object, "micro_batches", path, 1);
  if (!microBatches) return microBatches.error();
  auto scheduleName = json::optional<std::string>(object, "schedule", path, "1f1b");
  if (!scheduleName) return scheduleName.error();
  auto schedule = ir::parseSchedule(*scheduleName);
  if (!schedule) return schedule.error().in(path + ".schedule");
  if (*stages < 1 || *virtualStages < 1 || *microBatches < 1) {
    return Error{path + ": expected positive stages, virtual_stages and micro_batches"};
  }
  return PipelineRecord{static_cast<int>(*stages), static_cast<int>(*virtualStages),
                        static_cast<int>(*microBatches), *schedule};
}

/// "parallel_config": every degree a positive integer no larger than kMaxDegree, the ZeRO stage
/// 0-3, the schedule and recompute by name.
Expected<ir::ParallelConfig> readParallelConfig(const Json& object) {
  constexpr int64_t kMaxDegree = int64_t{1} << 24;  // far beyond any cluster
  const std::string path = "parallel_config";
  if (!object.is_object()) return Error{path + ": expected an object"};
  ir::ParallelConfig config;
  const std::pair<const char*, int64_t*> degrees[] = {{"tp", &config.tp},
                                                      {"dp", &config.dp},
                                                      {"pp", &config.pp},
                                                      {"cp", &config.cp},
                                                      {"ep", &config.ep},
                                                      {"vpp", &config.vpp},
                                                      {"micro_batch_size", &config.mbs}};
  for (const auto& [key, value] : degrees) {
    auto read = json::optional<int64_t>(object, key, path, 1);
    if (!read) return read.error();
    if (*read < 1 || *read > kMaxDegree) {
      return Error{
          fmt::format("{}.{}: {} is not an integer from 1 to {}", path, key, *read, kMaxDegree)};
    }
    *value = *read;
  }
  auto schedule = json::optional<std::string>(object, "schedule", path, "1f1b");
  if (!schedule) return schedule.error();
  auto parsedSchedule = ir::parseSchedule(*schedule);
  if (!parsedSchedule) return parsedSchedule.error().in(path + ".schedule");
  config.schedule = *parsedSchedule;
  auto recompute = json::optional<std::string>(object, "recompute", path, "none");
  if (!recompute) return recompute.error();
  auto parsedRecompute = ir::parseRecompute(*recompute);
  if (!parsedRecompute) return parsedRecompute.error().in(path + ".recompute");
  config.recompute = *parsedRecompute;
  auto sequenceParallel = json::optional<bool>(object, "sequence_parallel", path, false);
  if (!sequenceParallel) return sequenceParallel.error();
  config.sequenceParallel = *sequenceParallel;
  auto zero = json::optional<int64_t>(object, "zero_stage", path, 0);
  if (!zero) return zero.error();
  if (*zero < 0 || *zero > 3) {
    return Error{fmt::format("{}.zero_stage: {}: expected 0, 1, 2 or 3", path, *zero)};
  }
  config.zero = static_cast<int>(*zero);
  return config;
}

/// features.recompute.layers: the layer recompute the plan's ops were marked with.
Expected<ir::Recompute> readLayerRecompute(const Json& features) {
  if (!features.contains("recompute")) return ir::Recompute::kNone;
  const std::string path = "features.recompute";
  auto name = json::optional<std::string>(features.at("recompute"), "layers", path, "none");
  if (!name) return name.error();
  auto recompute = ir::parseRecompute(*name);
  if (!recompute) return recompute.error().in(path + ".layers");
  return *recompute;
}

Expected<OpRecord> readOp(const Json& object, const std::string& path) {
  OpRecord op;
  auto name = json::required<std::string>(object, "name", path);
  if (!name) return name.error();
  auto kind = json::required<std::string>(object, "kind", path);
  if (!kind) return kind.error();
  auto strategy = json::required<std::vector<std::vector<int64_t>>>(object, "strategy", path);
  if (!strategy) return strategy.error();
  auto block = json::optional<std::string>(object, "block", path, "");
  if (!block) return block.error();
  auto source = json::optional<std::string>(object, "strategy_source", path, "");
  if (!source) return source.error();
  auto matrix = json::optional<std::vector<int64_t>>(object, "device_matrix", path, {});
  if (!matrix) return matrix.error();
  auto stage = json::optional<int64_t>(object, "stage", path, 0);
  if (!stage) return stage.error();
  auto chunk = json::optional<int64_t>(object, "chunk", path, 0);
  if (!chunk) return chunk.error();
  auto recomputed = json::optional<bool>(object, "recompute", path, false);
  if (!recomputed) return recomputed.error();
  op.stage = static_cast<int>(*stage);
  op.chunk = static_cast<int>(*chunk);
  op.recomputed = *recomputed;
  op.name = *name;
  op.kind = *kind;
  op.strategy = *strategy;
  op.block = *block;
  op.strategySource = *source;
  op.deviceMatrix = *matrix;
  if (object.contains("inputs")) {
    auto inputs = readList<LayoutRecord>(object, "inputs", path, readLayout);
    if (!inputs) return inputs.error();
    op.inputs = std::move(*inputs);
  }
  if (object.contains("outputs")) {
    auto outputs = readList<LayoutRecord>(object, "outputs", path, readLayout);
    if (!outputs) return outputs.error();
    op.outputs = std::move(*outputs);
  }
  return op;
}

Status readEstimate(const Json& object, const std::string& path, EstimateRecord& estimate) {
  auto stepTime = json::required<double>(object, "step_time_s", path);
  if (!stepTime) return stepTime.error();
  auto peak = json::required<int64_t>(object, "peak_memory_bytes", path);
  if (!peak) return peak.error();
  auto byDevice = json::required<std::vector<int64_t>>(object, "memory_by_device", path);
  if (!byDevice) return byDevice.error();
  auto device = json::optional<int64_t>(object, "device_memory_bytes", path, 0);
  if (!device) return device.error();
  auto fits = json::optional<bool>(object, "fits", path, true);
  if (!fits) return fits.error();
  estimate.stepTimeSeconds = *stepTime;
  estimate.peakMemoryBytes = *peak;
  estimate.deviceMemoryBytes = *device;
  estimate.fits = *fits;
  estimate.memoryByDevice = *byDevice;
  return {};
}

}  // namespace

Expected<Plan> planFromJson(const Json& object, const std::string& sourceName) {
  auto fail = [&](const Error& error) { return error.in(sourceName); };
  auto format = json::required<std::string>(object, "format", "");
  if (!format) return fail(format.error());
  if (*format != "autopar.plan") return fail(Error{"format: expected \"autopar.plan\""});
  auto version = json::required<int>(object, "version", "");
  if (!version) return fail(version.error());
  if (*version != kPlanFormatVersion) {
    return fail(Error{
        fmt::format("version: {} is not supported; expected {}", *version, kPlanFormatVersion)});
  }
  Plan plan;
  auto devices = json::required<int64_t>(object, "devices", "");
  if (!devices) return fail(devices.error());
  if (*devices < 1) return fail(Error{"devices: expected a positive integer"});
  auto search = json::optional<std::string>(object, "search", "", "semi_auto");
  if (!search) return fail(search.error());
  auto ranks = json::optional<std::vector<int>>(object, "ranks", "", {});
  if (!ranks) return fail(ranks.error());
  auto ops = readList<OpRecord>(object, "ops", "", readOp);
  if (!ops) return fail(ops.error());
  plan.devices = *devices;
  plan.search = *search;
  plan.ranks = *ranks;
  plan.ops = std::move(*ops);
  if (object.contains("features")) {
    auto pipeline = readPipeline(object.at("features"));
    if (!pipeline) return fail(pipeline.error());
    plan.pipeline = *pipeline;
    auto recompute = readLayerRecompute(object.at("features"));
    if (!recompute) return fail(recompute.error());
    plan.features.recompute = *recompute;
  }
  if (object.contains("parallel_config")) {
    auto parallel = readParallelConfig(object.at("parallel_config"));
    if (!parallel) return fail(parallel.error());
    plan.parallel = *parallel;
  }
  if (object.contains("parameters")) {
    auto parameters = readList<ParameterRecord>(object, "parameters", "", readParameter);
    if (!parameters) return fail(parameters.error());
    plan.parameters = std::move(*parameters);
  }
  if (object.contains("inputs")) {
    const Json& inputs = object.at("inputs");
    auto model = json::optional<std::string>(inputs, "model", "inputs", "");
    if (!model) return fail(model.error());
    auto microBatch = json::optional<int64_t>(inputs, "micro_batch", "inputs", 0);
    if (!microBatch) return fail(microBatch.error());
    auto sequence = json::optional<int64_t>(inputs, "sequence", "inputs", 0);
    if (!sequence) return fail(sequence.error());
    auto modelHash = json::optional<std::string>(inputs, "model_hash", "inputs", "");
    if (!modelHash) return fail(modelHash.error());
    auto cluster = json::optional<std::string>(inputs, "cluster", "inputs", "");
    if (!cluster) return fail(cluster.error());
    auto clusterHash = json::optional<std::string>(inputs, "cluster_hash", "inputs", "");
    if (!clusterHash) return fail(clusterHash.error());
    plan.inputs.model = *model;
    plan.inputs.modelHash = *modelHash;
    plan.inputs.cluster = *cluster;
    plan.inputs.clusterHash = *clusterHash;
    plan.inputs.microBatch = *microBatch;
    plan.inputs.sequence = *sequence;
  }
  if (object.contains("estimate")) {
    if (auto status = readEstimate(object.at("estimate"), "estimate", plan.estimate); !status) {
      return fail(status.error());
    }
  }
  return plan;
}

Expected<Plan> parsePlanJson(const std::string& text, const std::string& sourceName) {
  Json object = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return Error{fmt::format("{}: not valid JSON", sourceName)};
  return planFromJson(object, sourceName);
}

Expected<Plan> readPlanFile(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return text.error();
  return parsePlanJson(*text, path);
}

}  // namespace autopar::plan
