#pragma once
/// \file
/// How much of a stage's activation communication its compute hides, as far as the code path
/// overlaps it (cost::CodePath): Transformer Engine's TP overlap hides all-gathers and
/// reduce-scatters, Megatron's asynchronous all-reduce the backward's all-reduces, MindSpore's
/// interleaved copies everything, the expert overlap the token exchange, and a context-parallel
/// ring runs under the attention alone. Only what outlasts the compute stays exposed.

#include "cost/graph_cost.h"

namespace autopar::cost {

/// Replaces the stage's forward and backward activation communication (and the replayed part of
/// its recompute) with what stays exposed under `options`' code path; called before the
/// parameter collectives are added.
void hideActivationComm(StageCost& stage, const EvaluateOptions& options);

}  // namespace autopar::cost
