#pragma once
/// \file
/// Repeated layers folded for the op-level searches. A stack of identical layers ("llm.layer.0"
/// .. "llm.layer.79", ir::isStackLayer) keeps its first two layers in a smaller graph: the first
/// keeps its own decision (it reads what comes before the stack), the second stands for every
/// later one. A search decides each layer kind once and every copy takes the decision, as the
/// layer-level search's block probe does (planner/op_search.h); the searches weigh each op by the
/// copies it stands for (OpCopies), so the model's ends do not outweigh its layers.
///   foldRepeatedLayers(Qwen2-VL-72B: 2,173 ops, 32 vision and 80 language layers)
///     -> 91 ops: the ends (13 ops), vit.layer.0 and .1 (20 ops each), llm.layer.0 and .1 (19 each)

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "rules/sharding_rule.h"
#include "search/op_level/objective.h"

namespace autopar::search {

struct LayerFold {
  ir::Graph graph;  ///< the folded graph
  /// Per op of the original graph, the op of `graph` that decides it.
  std::vector<ir::OpId> representative;
  OpCopies copies;  ///< per op of `graph`, how many ops of the original it stands for
  /// One line per folded stack: "llm.layer: 80 identical layers, decided as 2".
  std::vector<std::string> summary;
};

/// The graph with every stack of three or more layers whose layers after the first are alike
/// (kinds, attributes, shapes, annotations and wiring, op by op) cut to its first two; nullopt
/// when no stack folds.
std::optional<LayerFold> foldRepeatedLayers(const ir::Graph& graph);

/// Per op of the original graph, the cuts its representative was given in the folded graph.
std::vector<rules::FactorCuts> unfoldCuts(const LayerFold& fold,
                                          const std::vector<rules::FactorCuts>& foldedCuts);

}  // namespace autopar::search
