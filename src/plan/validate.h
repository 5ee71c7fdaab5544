#pragma once
/// \file
/// Checks that a plan fits a graph and a device count: the same ops with the same kinds, one
/// strategy entry per input and per input dim, cuts that divide the shapes, and cut products that
/// divide the device count. Factor consistency between inputs (MatMul's K cut on both sides) is
/// checked when the plan's strategies are applied through rules.

#include "ir/graph.h"
#include "plan/plan.h"
#include "util/expected.h"

namespace autopar::plan {

/// A pipelined plan lists stage 0's ranks and its strategies are over one stage's devices:
/// numDevices / stages, the stages counted from ops[].stage.
Status validatePlan(const Plan& plan, const ir::Graph& graph, int64_t numDevices);

}  // namespace autopar::plan
