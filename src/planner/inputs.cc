#include "planner/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "frontend/graph_json.h"
#include "frontend/model_config.h"
#include "frontend/model_presets.h"
#include "frontend/onnx_import.h"
#include "frontend/transformer.h"
#include "ir/setting.h"
#include "util/json_fields.h"
#include "util/text_file.h"

namespace autopar::planner {

using Setting = ir::Setting;

namespace {

bool endsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Expected<LoadedModel> loadFfn(const ModelOptions& options) {
  const int64_t batch = options.microBatch > 0 ? options.microBatch : 32;
  auto graph = frontend::buildFfn(batch);
  if (!graph) return graph.error();
  return LoadedModel{std::move(*graph), "ffn", batch, 0, batch};
}

}  // namespace

int64_t dataParallelDegree(const ModelOptions& options, int64_t stageDevices) {
  const ir::ParallelConfig& parallel = *options.parallel;
  if (!options.dataParallelFromDevices) return parallel.dp;
  return std::max<int64_t>(stageDevices / (parallel.tp * parallel.cp), 1);
}

Expected<LoadedModel> loadModel(const std::string& model, const ModelOptions& options,
                                int64_t numDevices) {
  if (endsWith(model, ".onnx")) {
    auto graph = frontend::readOnnx(model);
    if (!graph) return graph.error();
    return LoadedModel{std::move(*graph), model, 0, 0};
  }
  std::optional<frontend::TransformerConfig> fromFile;
  // A transformer given in the options (a run yaml, or the caller's already-read config) needs
  // no file read.
  if (endsWith(model, ".json") && !options.transformer) {
    // A model configuration (Hugging Face config.json or dimensions) builds a transformer;
    // anything else is a graph.
    auto text = readTextFile(model);
    if (!text) return text.error();
    auto document = json::parseJsonText(*text);
    if (!document || !frontend::isModelConfig(*document)) {
      auto graph = frontend::parseGraphJson(*text, model);
      if (!graph) return graph.error();
      return LoadedModel{std::move(*graph), model, 0, 0};
    }
    auto config = frontend::modelConfigFromJson(*document);
    if (!config) return config.error().in(model);
    fromFile = std::move(*config);
  }
  if (model == "ffn" && !options.transformer) return loadFfn(options);
  auto config = options.transformer ? Expected<frontend::TransformerConfig>(*options.transformer)
                : fromFile          ? Expected<frontend::TransformerConfig>(*fromFile)
                                    : frontend::transformerPreset(model);
  if (!config) return config.error();
  if (options.sequence > 0) config->seq = options.sequence;
  if (options.dtype) config->dtype = *options.dtype;
  if (options.attention) config->attention = *options.attention;
  if (options.loss) config->loss = *options.loss;
  // --micro-batch is per data-parallel replica, as Megatron-LM's --micro-batch-size; the graph
  // holds the micro-batch of all replicas, which data parallelism then splits.
  const int64_t perReplica = options.microBatch > 0 ? options.microBatch : config->microBatch;
  int64_t dataParallel = numDevices;
  if (options.parallel) {
    ir::ParallelConfig parallel = *options.parallel;
    parallel.dp = dataParallelDegree(options, numDevices);
    const int64_t used = parallel.tp * parallel.cp * parallel.dp;
    if (used > numDevices) {
      return Error{fmt::format("{} x {} x {}: uses {} devices but only {} are available",
                               ir::flag(Setting::kTp, parallel.tp),
                               ir::flag(Setting::kCp, parallel.cp),
                               ir::flag(Setting::kDp, parallel.dp), used, numDevices)};
    }
    dataParallel = parallel.dp;
    if (options.annotate) config->parallel = parallel;
  }
  config->microBatch = options.graphBatch > 0 ? options.graphBatch : perReplica * dataParallel;
  auto graph = frontend::buildTransformer(*config);
  if (!graph) return graph.error().in(fmt::format("model '{}'", model));
  // A graph batch given whole has no per-replica share.
  return LoadedModel{
      std::move(*graph),  model,           options.graphBatch > 0 ? 0 : perReplica, config->seq,
      config->microBatch, config->parallel};
}

bool isGraphModel(const std::string& model) {
  if (endsWith(model, ".onnx")) return true;
  if (!endsWith(model, ".json")) return false;
  auto text = readTextFile(model);
  if (!text) return false;
  auto document = json::parseJsonText(*text);
  return document && !frontend::isModelConfig(*document);
}

Expected<frontend::TransformerConfig> transformerConfigOf(const std::string& model) {
  if (endsWith(model, ".json")) {
    auto text = readTextFile(model);
    if (!text) return text.error();
    auto document = json::parseJsonText(*text);
    if (!document) return document.error().in(model);
    if (!frontend::isModelConfig(*document)) {
      return Error{fmt::format(
          "{}: a graph, not a model config; this needs a preset, a Hugging Face config.json or a "
          "dimensions JSON",
          model)};
    }
    auto config = frontend::modelConfigFromJson(*document);
    if (!config) return config.error().in(model);
    return config;
  }
  if (endsWith(model, ".onnx")) {
    return Error{
        fmt::format("{}: an ONNX graph; this needs a preset, a Hugging Face config.json "
                    "or a dimensions JSON",
                    model)};
  }
  return frontend::transformerPreset(model);
}

Expected<cluster::Cluster> loadCluster(const std::string& name, int nodes, int devices,
                                       int devicesPerNode) {
  if (cluster::isGroupReference(name)) {
    if (devicesPerNode > 0) {
      return Error{fmt::format("{}: resizes a preset's nodes; {} gives its own",
                               ir::flag(Setting::kDevicesPerNode), name)};
    }
    auto group = cluster::loadGroupReference(name, nodes);
    if (!group || devices <= 0) return group;
    return cluster::takeDevices(*group, devices);
  }
  const bool yaml = endsWith(name, ".yaml") || endsWith(name, ".yml");
  if (yaml && devicesPerNode > 0) {
    return Error{fmt::format("{}: resizes a preset's nodes; {} gives its own levels",
                             ir::flag(Setting::kDevicesPerNode), name)};
  }
  Expected<cluster::Cluster> loaded =
      yaml ? cluster::loadClusterYaml(name) : cluster::clusterPreset(name, nodes, devicesPerNode);
  if (!loaded && yaml) {
    // Read again only when it failed: a file of device groups is named as such.
    if (auto groups = loadClusterGroups(name); groups && *groups) {
      return Error{
          fmt::format("{}: a cluster of {} device groups; `autopar search` plans on it, "
                      "while this verb takes one device kind (a preset, or a yaml of "
                      "one device)",
                      name, (*groups)->groups.size())};
    }
  }
  if (!loaded) return loaded.error();
  if (devices <= 0) return loaded;
  return cluster::takeDevices(*loaded, devices);
}

Expected<std::optional<cluster::ClusterGroups>> loadClusterGroups(const std::string& name) {
  using Groups = std::optional<cluster::ClusterGroups>;
  if (!endsWith(name, ".yaml") && !endsWith(name, ".yml")) return Groups();
  auto text = readTextFile(name);
  if (!text) return text.error();
  if (!cluster::describesGroups(*text)) return Groups();
  auto groups = cluster::parseClusterGroupsYaml(*text, name);
  if (!groups) return groups.error();
  return Groups(std::move(*groups));
}

std::string formatBytes(int64_t bytes) {
  constexpr double kKiB = 1024.0;
  const auto value = static_cast<double>(bytes);
  if (value >= kKiB * kKiB * kKiB) return fmt::format("{:.2f} GiB", value / (kKiB * kKiB * kKiB));
  if (value >= kKiB * kKiB) return fmt::format("{:.1f} MiB", value / (kKiB * kKiB));
  if (value >= kKiB) return fmt::format("{:.1f} KiB", value / kKiB);
  return fmt::format("{} B", bytes);
}

std::string formatSeconds(double seconds) {
  if (seconds >= 1.0) return fmt::format("{:.3f} s", seconds);
  if (seconds >= 1e-3) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.1f} us", seconds * 1e6);
}

}  // namespace autopar::planner
