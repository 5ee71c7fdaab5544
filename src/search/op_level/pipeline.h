#pragma once
/// \file
/// Pipeline stage assignment: which (virtual) stage runs each op.
///
/// With no block given a stage, the layers of stacks (blocks tagged "<prefix>.<index>", in graph
/// order) split into p * v contiguous, equal-as-possible runs, one per virtual stage; virtual
/// stage k runs on stage k % p as model chunk k / p (Megatron-LM's interleaving). Every other op
/// joins the latest stage among its inputs' producers, so an embedding goes with the first layer
/// and a head with the last; an op that feeds a later layer and reads nothing staged joins the
/// stage of its first consumer.
///
/// With stages given per block (seed 001's Cell.pipeline_stage), those ops keep them and every
/// other op joins the latest stage among its inputs' producers, or stage 0 (MindSpore's default).
/// Interleaved, a block's pipeline_segment names its chunk (0 when not given): stage s, chunk c
/// is virtual stage c * p + s, so blocks on (0, 0), (1, 0), (0, 1), (1, 1) of two stages run in
/// that order. Either way no op may read a tensor produced on a later (virtual) stage.

#include <vector>

#include "ir/graph.h"
#include "util/expected.h"

namespace autopar::search {

struct StageAssignment {
  std::vector<int> virtualStageOf;  ///< per op, in [0, stages * virtualStages)
  int stages = 1;
  int virtualStages = 1;
  [[nodiscard]] int stageOf(ir::OpId op) const { return virtualStageOf[op] % stages; }
};

/// Fails when a block's stage or chunk is out of range, when there are fewer layers than virtual
/// stages, or when an op would read from a later stage; messages name the block or op.
Expected<StageAssignment> assignStages(const ir::Graph& graph, int stages, int virtualStages);

}  // namespace autopar::search
