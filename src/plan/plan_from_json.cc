#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <type_traits>

#include "plan/plan_json.h"
#include "util/json_fields.h"
#include "util/text_file.h"

namespace autopar::plan {

namespace {

using Json = nlohmann::json;

/// How a field is read (a reader from util/json_fields.h) and what plan's errors call its type.
template <class T>
struct FieldType {
  Expected<T> (*read)(const Json& value, const std::string& path);
  const char* expected;
};

/// A list of integers each narrowed to int, as the plan's axis and rank lists hold them.
Expected<std::vector<int>> readSmallIntList(const Json& value, const std::string& path) {
  auto list = json::readIntList(value, path);
  if (!list) return list.error();
  std::vector<int> items;
  items.reserve(list->size());
  for (int64_t item : *list) items.push_back(static_cast<int>(item));
  return items;
}

/// A list of rows, each read with `readRow`.
template <class Row, Expected<Row> (*readRow)(const Json&, const std::string&)>
Expected<std::vector<Row>> readRows(const Json& value, const std::string& path) {
  if (!value.is_array()) {
    return Error{
        fmt::format("{}: expected an array of arrays, got {}", path, json::jsonTypeName(value))};
  }
  std::vector<Row> rows;
  rows.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    auto row = readRow(value[i], json::indexPath(path, i));
    if (!row) return row.error();
    rows.push_back(std::move(*row));
  }
  return rows;
}

constexpr FieldType<std::string> kString{json::readString, "a string"};
constexpr FieldType<bool> kBool{json::readBool, "true or false"};
constexpr FieldType<int64_t> kInt{json::readInt, "an integer"};
constexpr FieldType<double> kNumber{json::readNumber, "a number"};
constexpr FieldType<std::vector<int64_t>> kIntList{json::readIntList, "a list of integers"};
constexpr FieldType<std::vector<int>> kSmallIntList{readSmallIntList, "a list of integers"};
constexpr FieldType<std::vector<std::vector<int64_t>>> kIntLists{
    readRows<std::vector<int64_t>, json::readIntList>, "a list of lists of integers"};
constexpr FieldType<std::vector<std::vector<int>>> kSmallIntLists{
    readRows<std::vector<int>, readSmallIntList>, "a list of lists of integers"};

// Plan files keep their own error wording, older than the shared reader's: "ops[2].name: missing;
// expected a string" and "ops[2].stage: expected an integer", where the reader would say
// "ops[2]: missing required field 'name'" and "ops[2].stage: expected an integer, got string".
// The reader's error is replaced by plan's (the path is the same).

/// `value` (at `path`) read as `type`.
template <class T>
Expected<T> readField(const Json& value, const std::string& path, const FieldType<T>& type) {
  auto read = type.read(value, path);
  if (!read) return Error{fmt::format("{}: expected {}", path, type.expected)};
  return read;
}

/// The member `key` of `object` (at `path`), which must be there.
template <class T>
Expected<T> requiredField(const Json& object, std::string_view key, const std::string& path,
                          const FieldType<T>& type) {
  const std::string where = json::childPath(path, key);
  auto field = json::requireField(object, path, key);
  if (!field) return Error{fmt::format("{}: missing; expected {}", where, type.expected)};
  return readField(**field, where, type);
}

/// The member `key` of `object` (at `path`), or `fallback` when there is none (or `object` is
/// not an object).
template <class T>
Expected<T> optionalField(const Json& object, std::string_view key, const std::string& path,
                          const FieldType<T>& type, std::type_identity_t<T> fallback) {
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  return readField(*it, json::childPath(path, key), type);
}

/// Reads a list member element by element with `readItem(item, path)`.
template <class T, class ReadItem>
Expected<std::vector<T>> readList(const Json& object, std::string_view key, const std::string& path,
                                  ReadItem readItem) {
  const std::string where = json::childPath(path, key);
  auto list = object.find(key);
  if (list == object.end() || !list->is_array()) return Error{where + ": expected a list"};
  std::vector<T> items;
  for (size_t i = 0; i < list->size(); ++i) {
    auto item = readItem((*list)[i], json::indexPath(where, i));
    if (!item) return item.error();
    items.push_back(std::move(*item));
  }
  return items;
}

Expected<LayoutRecord> readLayout(const Json& object, const std::string& path) {
  LayoutRecord layout;
  auto tensor = requiredField(object, "tensor", path, kString);
  if (!tensor) return tensor.error();
  auto matrix = requiredField(object, "device_matrix", path, kIntList);
  if (!matrix) return matrix.error();
  auto dimAxes = requiredField(object, "dim_axes", path, kSmallIntLists);
  if (!dimAxes) return dimAxes.error();
  auto tensorMap = optionalField(object, "tensor_map", path, kIntList, {});
  if (!tensorMap) return tensorMap.error();
  auto partial = optionalField(object, "partial_axes", path, kSmallIntList, {});
  if (!partial) return partial.error();
  return LayoutRecord{*tensor, *matrix, *dimAxes, *tensorMap, *partial};
}

Expected<ParameterRecord> readParameter(const Json& object, const std::string& path) {
  auto name = requiredField(object, "name", path, kString);
  if (!name) return name.error();
  auto shards = optionalField(object, "optimizer_shards", path, kInt, 1);
  if (!shards) return shards.error();
  if (*shards < 1) return Error{path + ".optimizer_shards: expected a positive integer"};
  auto dim = optionalField(object, "shard_dim", path, kInt, -1);
  if (!dim) return dim.error();
  auto placement = optionalField(object, "placement", path, kString, "device");
  if (!placement) return placement.error();
  auto note = optionalField(object, "note", path, kString, "");
  if (!note) return note.error();
  return ParameterRecord{*name, *shards, static_cast<int>(*dim), *placement, *note};
}

/// features.pipeline; the rest of the features is what the estimate used and is not read back.
Expected<ir::PipelineShape> readPipeline(const Json& features) {
  ir::PipelineShape pipeline;
  if (!features.contains("pipeline")) return pipeline;
  const Json& object = features.at("pipeline");
  const std::string path = "features.pipeline";
  auto stages = optionalField(object, "stages", path, kInt, 1);
  if (!stages) return stages.error();
  auto virtualStages = optionalField(object, "virtual_stages", path, kInt, 1);
  if (!virtualStages) return virtualStages.error();
  auto microBatches = optionalField(object, "micro_batches", path, kInt, 1);
  if (!microBatches) return microBatches.error();
  auto scheduleName = optionalField(object, "schedule", path, kString, "1f1b");
  if (!scheduleName) return scheduleName.error();
  auto schedule = ir::parseSchedule(*scheduleName);
  if (!schedule) return schedule.error().in(path + ".schedule");
  if (*stages < 1 || *virtualStages < 1 || *microBatches < 1) {
    return Error{path + ": expected positive stages, virtual_stages and micro_batches"};
  }
  return ir::PipelineShape{static_cast<int>(*stages), static_cast<int>(*virtualStages),
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
    auto read = optionalField(object, key, path, kInt, 1);
    if (!read) return read.error();
    if (*read < 1 || *read > kMaxDegree) {
      return Error{
          fmt::format("{}.{}: {} is not an integer from 1 to {}", path, key, *read, kMaxDegree)};
    }
    *value = *read;
  }
  auto schedule = optionalField(object, "schedule", path, kString, "1f1b");
  if (!schedule) return schedule.error();
  auto parsedSchedule = ir::parseSchedule(*schedule);
  if (!parsedSchedule) return parsedSchedule.error().in(path + ".schedule");
  config.schedule = *parsedSchedule;
  auto recompute = optionalField(object, "recompute", path, kString, "none");
  if (!recompute) return recompute.error();
  auto parsedRecompute = ir::parseRecompute(*recompute);
  if (!parsedRecompute) return parsedRecompute.error().in(path + ".recompute");
  config.recompute = *parsedRecompute;
  auto sequenceParallel = optionalField(object, "sequence_parallel", path, kBool, false);
  if (!sequenceParallel) return sequenceParallel.error();
  config.sequenceParallel = *sequenceParallel;
  auto zero = optionalField(object, "zero_stage", path, kInt, 0);
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
  auto name = optionalField(features.at("recompute"), "layers", path, kString, "none");
  if (!name) return name.error();
  auto recompute = ir::parseRecompute(*name);
  if (!recompute) return recompute.error().in(path + ".layers");
  return *recompute;
}

Expected<OpRecord> readOp(const Json& object, const std::string& path) {
  OpRecord op;
  auto name = requiredField(object, "name", path, kString);
  if (!name) return name.error();
  auto kind = requiredField(object, "kind", path, kString);
  if (!kind) return kind.error();
  auto strategy = requiredField(object, "strategy", path, kIntLists);
  if (!strategy) return strategy.error();
  auto block = optionalField(object, "block", path, kString, "");
  if (!block) return block.error();
  auto source = optionalField(object, "strategy_source", path, kString, "");
  if (!source) return source.error();
  auto matrix = optionalField(object, "device_matrix", path, kIntList, {});
  if (!matrix) return matrix.error();
  auto stage = optionalField(object, "stage", path, kInt, 0);
  if (!stage) return stage.error();
  auto chunk = optionalField(object, "chunk", path, kInt, 0);
  if (!chunk) return chunk.error();
  auto recomputed = optionalField(object, "recompute", path, kBool, false);
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
  auto stepTime = requiredField(object, "step_time_s", path, kNumber);
  if (!stepTime) return stepTime.error();
  auto peak = requiredField(object, "peak_memory_bytes", path, kInt);
  if (!peak) return peak.error();
  auto byDevice = requiredField(object, "memory_by_device", path, kIntList);
  if (!byDevice) return byDevice.error();
  auto device = optionalField(object, "device_memory_bytes", path, kInt, 0);
  if (!device) return device.error();
  auto fits = optionalField(object, "fits", path, kBool, true);
  if (!fits) return fits.error();
  auto band = optionalField(object, "memory_band_bytes", path, kIntList, std::vector<int64_t>{});
  if (!band) return band.error();
  if (!band->empty() && (band->size() != 2 || (*band)[0] > (*band)[1])) {
    return Error{fmt::format("{}: expected [low, high] with low <= high",
                             json::childPath(path, "memory_band_bytes"))};
  }
  auto verdict = optionalField(object, "memory_verdict", path, kString, std::string{});
  if (!verdict) return verdict.error();
  if (!verdict->empty() && *verdict != "fits" && *verdict != "tight" && *verdict != "over") {
    return Error{fmt::format("{}: expected fits, tight or over, got '{}'",
                             json::childPath(path, "memory_verdict"), *verdict)};
  }
  estimate.stepTimeSeconds = *stepTime;
  estimate.peakMemoryBytes = *peak;
  estimate.deviceMemoryBytes = *device;
  estimate.fits = *fits;
  if (!band->empty()) {
    estimate.memoryBandLowBytes = (*band)[0];
    estimate.memoryBandHighBytes = (*band)[1];
  }
  estimate.memoryVerdict = *verdict;
  estimate.memoryByDevice = *byDevice;
  return {};
}

}  // namespace

Expected<Plan> planFromJson(const Json& object, const std::string& sourceName) {
  auto fail = [&](const Error& error) { return error.in(sourceName); };
  auto format = requiredField(object, "format", "", kString);
  if (!format) return fail(format.error());
  if (*format != "autopar.plan") return fail(Error{"format: expected \"autopar.plan\""});
  auto version = requiredField(object, "version", "", kInt);
  if (!version) return fail(version.error());
  if (*version != kPlanFormatVersion) {
    return fail(Error{
        fmt::format("version: {} is not supported; expected {}", *version, kPlanFormatVersion)});
  }
  Plan plan;
  auto devices = requiredField(object, "devices", "", kInt);
  if (!devices) return fail(devices.error());
  if (*devices < 1) return fail(Error{"devices: expected a positive integer"});
  auto search = optionalField(object, "search", "", kString, "semi_auto");
  if (!search) return fail(search.error());
  auto ranks = optionalField(object, "ranks", "", kSmallIntList, {});
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
    plan.setup.emplace();
    static_cast<ir::ParallelConfig&>(*plan.setup) = *parallel;
  }
  auto shares = optionalField(object, "data_parallel_shares", "", kIntList, {});
  if (!shares) return fail(shares.error());
  plan.dataParallelShares = std::move(*shares);
  if (object.contains("parameters")) {
    auto parameters = readList<ParameterRecord>(object, "parameters", "", readParameter);
    if (!parameters) return fail(parameters.error());
    plan.parameters = std::move(*parameters);
  }
  if (object.contains("inputs")) {
    const Json& inputs = object.at("inputs");
    auto model = optionalField(inputs, "model", "inputs", kString, "");
    if (!model) return fail(model.error());
    auto microBatch = optionalField(inputs, "micro_batch", "inputs", kInt, 0);
    if (!microBatch) return fail(microBatch.error());
    auto sequence = optionalField(inputs, "sequence", "inputs", kInt, 0);
    if (!sequence) return fail(sequence.error());
    auto modelHash = optionalField(inputs, "model_hash", "inputs", kString, "");
    if (!modelHash) return fail(modelHash.error());
    auto cluster = optionalField(inputs, "cluster", "inputs", kString, "");
    if (!cluster) return fail(cluster.error());
    auto clusterHash = optionalField(inputs, "cluster_hash", "inputs", kString, "");
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
