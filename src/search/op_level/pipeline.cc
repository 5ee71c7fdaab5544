#include "search/op_level/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

namespace autopar::search {

namespace {

/// Virtual stages given per block (stage s, chunk c: c * stages + s); -1 where none is.
Expected<std::vector<int>> givenStages(const ir::Graph& graph, int stages, int virtualStages) {
  for (const auto& [scope, settings] : graph.blockSettings()) {
    if (settings.pipelineStage &&
        (*settings.pipelineStage < 0 || *settings.pipelineStage >= stages)) {
      return Error{
          fmt::format("block '{}': pipeline_stage {} is out of range for {} stage(s) "
                      "(expected 0..{})",
                      scope, *settings.pipelineStage, stages, stages - 1)};
    }
    if (settings.pipelineSegment &&
        (*settings.pipelineSegment < 0 || *settings.pipelineSegment >= virtualStages)) {
      return Error{fmt::format(
          "block '{}': pipeline_segment {} is out of range for {} model chunk(s) per stage "
          "(expected 0..{})",
          scope, *settings.pipelineSegment, virtualStages, virtualStages - 1)};
    }
  }
  std::vector<int> given(graph.ops().size(), -1);
  for (const ir::Op& op : graph.ops()) {
    const ir::BlockSettings settings = graph.settingsOf(op);
    if (settings.pipelineStage) {
      given[op.id] = settings.pipelineSegment.value_or(0) * stages + *settings.pipelineStage;
    }
  }
  return given;
}

/// Layers of stacks split evenly over `virtualStages` total virtual stages.
Expected<std::vector<int>> layerStages(const ir::Graph& graph, int total) {
  std::map<std::string, int> layerIndex;
  std::vector<std::string> layers;
  for (const ir::Op& op : graph.ops()) {
    if (ir::isStackLayer(op.block) && layerIndex.emplace(op.block, layers.size()).second) {
      layers.push_back(op.block);
    }
  }
  if (static_cast<int>(layers.size()) < total) {
    return Error{
        fmt::format("graph '{}': {} layer(s) cannot fill {} pipeline stage(s); use fewer "
                    "stages or give blocks a pipeline_stage",
                    graph.name(), layers.size(), total)};
  }
  std::vector<int> stages(graph.ops().size(), -1);
  const auto count = static_cast<int64_t>(layers.size());
  for (const ir::Op& op : graph.ops()) {
    auto it = layerIndex.find(op.block);
    if (it != layerIndex.end()) stages[op.id] = static_cast<int>(it->second * total / count);
  }
  return stages;
}

}  // namespace

Expected<StageAssignment> assignStages(const ir::Graph& graph, int stages, int virtualStages) {
  if (stages < 1) return Error{fmt::format("pipeline_stages: {} must be at least 1", stages)};
  StageAssignment result{std::vector<int>(graph.ops().size(), 0), stages, virtualStages};
  if (stages * virtualStages == 1) return result;
  auto given = givenStages(graph, stages, virtualStages);
  if (!given) return given.error();
  const bool anyGiven = std::any_of(given->begin(), given->end(), [](int s) { return s >= 0; });
  std::vector<int> fixed = *given;
  if (!anyGiven) {
    auto layers = layerStages(graph, stages * virtualStages);
    if (!layers) return layers.error();
    fixed = std::move(*layers);
  }
  auto& of = result.virtualStageOf;
  for (const ir::Op& op : graph.ops()) {
    // Given stages: what no block places starts on stage 0, as in MindSpore.
    int latest = anyGiven ? 0 : -1;
    for (ir::TensorId input : op.inputs) {
      const ir::OpId producer = graph.tensor(input).producer;
      if (producer != ir::kNoOp) latest = std::max(latest, of[producer]);
    }
    const int own = fixed[op.id];
    if (own >= 0 && own < latest) {
      return Error{
          fmt::format("op '{}' (block '{}'): on stage {} but reads an output of stage {}; "
                      "a stage may only read from earlier stages",
                      op.name, op.block, own, latest)};
    }
    of[op.id] = own >= 0 ? own : latest;
  }
  // Ops that read nothing staged (an embedding) join the stage of their first consumer.
  for (size_t i = graph.ops().size(); i-- > 0;) {
    if (of[i] >= 0) continue;
    int first = stages * virtualStages - 1;
    for (ir::TensorId output : graph.ops()[i].outputs) {
      for (ir::OpId consumer : graph.tensor(output).consumers)
        first = std::min(first, of[consumer]);
    }
    of[i] = first;
  }
  return result;
}

}  // namespace autopar::search
