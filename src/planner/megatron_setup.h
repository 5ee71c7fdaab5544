#pragma once
/// \file
/// Whether a plan an op-level search made (sharding propagation, the double-recursive search, the
/// ILP) is one Megatron-LM runs, and with which setup: its shardings are Megatron's when some
/// tensor-parallel degree's Megatron-style annotation of the model (frontend/transformer.h, with
/// or without sequence parallelism) gives every annotated op exactly the plan's cuts. The ops
/// Megatron leaves unannotated (elementwise ops, norms without sequence parallelism) follow
/// their inputs in either plan.
///   a recursive plan of llama2-7b on 8 devices that cuts every op's batch 8 ways: TP 1 DP 8
///   one whose first attention projection cuts its reduction dim: "op 'llm.layer.0.attn.q_proj'
///   is cut ((8,1),(1,1)) ..., which no Megatron-LM tensor-parallel degree gives"

#include <cstdint>

#include "plan/plan.h"
#include "planner/plan_evaluation.h"
#include "util/expected.h"

namespace autopar::planner {

/// Sets `plan.setup` to the setup Megatron-LM runs the plan with, when the plan has none (an
/// annotated plan keeps its own). `graphBatch` is the samples of the graph's micro-batch (every
/// data-parallel replica's). Fails in one line naming the first op whose sharding no degree
/// gives (at the degree that agrees longest), or the model when it is an operator graph.
Status withMegatronSetup(plan::Plan& plan, const PlanOptions& options, int64_t graphBatch);

}  // namespace autopar::planner
