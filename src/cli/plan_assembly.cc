#include "cli/plan_assembly.h"

#include <fmt/format.h>

#include "frontend/graph_json.h"
#include "plan/plan_json.h"

namespace autopar::cli {

namespace {

plan::LayoutRecord layoutRecord(const ir::Graph& graph, ir::TensorId tensor,
                                const layout::TensorLayout& layout) {
  return plan::LayoutRecord{graph.tensor(tensor).name, layout.deviceMatrix.shape(), layout.dimAxes,
                            layout.tensorMap(), layout.partialAxes};
}

std::string sourceName(rules::StrategySource source) {
  switch (source) {
    case rules::StrategySource::kOverride:
      return "override";
    case rules::StrategySource::kAnnotation:
      return "annotation";
    case rules::StrategySource::kDefault:
      return "default";
    case rules::StrategySource::kSearch:
      return "search";
  }
  return "default";
}

plan::OpRecord opRecord(const ir::Graph& graph, const ir::Op& op,
                        const rules::GraphSharding& sharding, const cost::CostReport& report) {
  const rules::ShardedOp& shard = sharding.ops[op.id];
  plan::OpRecord record;
  record.name = op.name;
  record.kind = std::string(ir::opKindName(op.kind));
  record.block = op.block;
  record.strategy = sharding.strategies[op.id];
  record.strategySource = sourceName(sharding.sources[op.id]);
  record.deviceMatrix = shard.matrix.shape();
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    record.inputs.push_back(layoutRecord(graph, op.inputs[i], shard.inputs[i]));
  }
  for (size_t j = 0; j < op.outputs.size(); ++j) {
    record.outputs.push_back(layoutRecord(graph, op.outputs[j], shard.outputs[j]));
  }
  record.forwardSeconds = report.ops[op.id].forwardSeconds;
  record.backwardSeconds = report.ops[op.id].backwardSeconds;
  return record;
}

plan::RedistributionRecord redistributionRecord(const ir::Graph& graph,
                                                const cost::EdgeRedistribution& edge) {
  plan::RedistributionRecord record;
  record.tensor = graph.tensor(edge.tensor).name;
  record.fromOp = edge.producer == ir::kNoOp ? "" : graph.op(edge.producer).name;
  record.toOp = edge.consumer == ir::kNoOp ? "" : graph.op(edge.consumer).name;
  record.direction = edge.direction == cost::EdgeDirection::kForward ? "forward" : "backward";
  record.gradientSync = edge.isGradientSync;
  record.seconds = edge.redistribution.seconds;
  record.bytesPerDevice = edge.redistribution.bytesPerDevice;
  for (const auto& step : edge.redistribution.steps) {
    record.steps.push_back(plan::StepRecord{std::string(layout::primitiveName(step.kind)),
                                            step.matrix.shape(), step.axis, step.dim, step.splitDim,
                                            step.bytesPerDevice, step.seconds, step.algorithm});
  }
  return record;
}

plan::EstimateRecord estimateRecord(const cost::CostReport& report,
                                    const cluster::Cluster& cluster) {
  plan::EstimateRecord estimate;
  estimate.stepTimeSeconds = report.time.totalSeconds();
  estimate.computeSeconds = report.time.computeSeconds;
  estimate.communicationSeconds = report.time.communicationSeconds;
  estimate.gradientSyncSeconds = report.time.gradientSyncSeconds;
  estimate.optimizerSeconds = report.time.optimizerSeconds;
  estimate.peakMemoryBytes = report.memory.total();
  estimate.deviceMemoryBytes = cluster.device.memoryBytes;
  estimate.fits = report.memory.total() <= cluster.device.memoryBytes;
  estimate.memoryByDevice = report.memoryBytesByDevice;
  const cost::MemoryBreakdown& memory = report.memory;
  estimate.memory =
      plan::MemoryRecord{memory.parameterBytes,  memory.gradientBytes,      memory.optimizerBytes,
                         memory.activationBytes, memory.communicationBytes, memory.hostBytes};
  return estimate;
}

}  // namespace

plan::StepRecord stepRecord(const layout::RedistStep& step) {
  return plan::StepRecord{std::string(layout::primitiveName(step.kind)),
                          step.matrix.shape(),
                          step.axis,
                          step.dim,
                          step.splitDim,
                          step.bytesPerDevice,
                          step.seconds,
                          step.algorithm};
}

std::string describeCluster(const cluster::Cluster& cluster) {
  std::string text =
      fmt::format("{}|{}|{}|{}|{}", cluster.name, cluster.device.name, cluster.numDevices,
                  cluster.device.memoryBytes, cluster.device.memoryBytesPerSecond);
  for (const auto& [precision, peak] : cluster.device.peakFlopsPerSecond) {
    text += fmt::format("|p{}={}", static_cast<int>(precision), peak);
  }
  for (const auto& level : cluster.levels) {
    text += fmt::format("|{}:{}:{}:{}", level.name, level.domainSize, level.bytesPerSecond,
                        level.latencySeconds);
  }
  return text;
}

plan::Plan assemblePlan(const LoadedModel& model, const rules::GraphSharding& sharding,
                        const cost::CostReport& report, const cluster::Cluster& cluster,
                        const std::string& clusterName) {
  const ir::Graph& graph = model.graph;
  plan::Plan result;
  result.devices = cluster.numDevices;
  result.ranks = sharding.ops.front().matrix.ranks();
  std::sort(result.ranks.begin(), result.ranks.end());
  result.inputs =
      plan::InputsRecord{model.source,     plan::fingerprint(frontend::graphToJson(graph).dump()),
                         clusterName,      plan::fingerprint(describeCluster(cluster)),
                         model.microBatch, model.sequence};
  for (const ir::Op& op : graph.ops()) result.ops.push_back(opRecord(graph, op, sharding, report));
  for (const auto& edge : report.redistributions) {
    result.redistributions.push_back(redistributionRecord(graph, edge));
  }
  result.estimate = estimateRecord(report, cluster);
  return result;
}

}  // namespace autopar::cli
