#pragma once
/// \file
/// Loading the CLI's inputs: a model (a preset name, a model config or a graph file) and a cluster
/// (a preset name or a yaml spec), with the options that shape them.

#include <cstdint>
#include <optional>
#include <string>

#include "cluster/cluster.h"
#include "cluster/cluster_groups.h"
#include "frontend/transformer.h"
#include "ir/graph.h"
#include "ir/parallel_config.h"
#include "util/expected.h"

namespace autopar::planner {

struct ModelOptions {
  /// Per data-parallel replica (Megatron's --micro-batch-size); 0: the preset's default (1). The
  /// graph's batch dim is this times the data-parallel degree (all devices without --tp).
  int64_t microBatch = 0;
  /// The graph's whole batch, when it is not microBatch x a data-parallel degree: an
  /// auto-parallel run yaml's micro-batch, which the op-level search cuts as it can (2 samples
  /// over 8 devices: a batch cut of 2 at most). 0: microBatch x data parallel.
  int64_t graphBatch = 0;
  int64_t sequence = 0;  ///< 0: the preset's default
  /// Megatron-style annotation of a transformer: tp, dp, cp, ep and sequence parallel (the
  /// pipeline, schedule, recompute and ZeRO stage are the training flags'). Unset: no
  /// annotation, every device data parallel.
  std::optional<ir::ParallelConfig> parallel{};
  /// With `parallel`: its dp is the devices tp x cp leave (--tp without --dp), not parallel->dp.
  bool dataParallelFromDevices = false;
  /// The transformer's compute type (bf16, fp16, fp8); unset: the preset's (bf16).
  std::optional<ir::DType> dtype;
  /// The kernel that runs the attention core; unset: the model's (FlashAttention-2 for presets).
  std::optional<frontend::AttentionKernel> attention;
  /// The kernel that runs the loss; unset: the model's (an fp32 copy of the logits).
  std::optional<ir::LossKernel> loss;
  /// false: `parallel` sets the graph's batch (micro-batch x data parallel), but no
  /// Megatron-style annotation is written; an op-level search shards the blocks instead
  /// (planner/op_search.h).
  bool annotate = true;
  /// A transformer given by a run yaml (--config) instead of a preset name.
  std::optional<frontend::TransformerConfig> transformer;
};

/// The data-parallel degree `options` give on `stageDevices` devices: parallel->dp, or with
/// dataParallelFromDevices the devices tp x cp leave (at least 1). Needs `options.parallel`.
int64_t dataParallelDegree(const ModelOptions& options, int64_t stageDevices);

struct LoadedModel {
  ir::Graph graph;
  std::string source;      ///< the preset name or the file path
  int64_t microBatch = 0;  ///< per data-parallel replica; 0 for graph files (batch is in the file)
  int64_t sequence = 0;
  /// Samples in the graph's micro-batch (every data-parallel replica's); 0 where the graph file
  /// does not say which dim is the batch.
  int64_t graphBatch = 0;
  /// The Megatron-style annotation the transformer was built with (ModelOptions::parallel, its
  /// dp resolved); unset when not annotated.
  std::optional<ir::ParallelConfig> parallel{};
};

/// `model` is a preset name (see `autopar models`), a .json file (a Hugging Face config.json or
/// a dimensions object, see frontend/model_config.h; otherwise a graph) or an ONNX model (.onnx).
Expected<LoadedModel> loadModel(const std::string& model, const ModelOptions& options,
                                int64_t numDevices);

/// Whether `model` names an operator graph (a graph JSON or an ONNX model) rather than a
/// transformer (a preset, a Hugging Face config.json or a dimensions JSON). A file that cannot
/// be read or parsed is not a graph here; loading it says why.
bool isGraphModel(const std::string& model);

/// The transformer a preset name or a model config file (.json: Hugging Face config.json or
/// dimensions) describes; graph files and ONNX models are not transformers to build.
Expected<frontend::TransformerConfig> transformerConfigOf(const std::string& model);

/// `cluster` is a preset name (see `autopar clusters`) or a path ending in .yaml/.yml. `nodes`
/// multiplies a preset; `devices` (0 = all) takes the first devices. A file of device groups is
/// refused naming the verb that takes it (`search`).
Expected<cluster::Cluster> loadCluster(const std::string& cluster, int nodes, int devices,
                                       int devicesPerNode = 0);

/// The device groups a cluster yaml describes (cluster/cluster_groups.h); empty for a preset
/// name or a file of one device kind.
Expected<std::optional<cluster::ClusterGroups>> loadClusterGroups(const std::string& cluster);

/// "1.50 GiB", "312.0 MiB", "512 B".
std::string formatBytes(int64_t bytes);
/// "12.3 ms", "1.23 s", "45.6 us".
std::string formatSeconds(double seconds);

}  // namespace autopar::planner
