#pragma once
/// \file
/// Turns a sharded graph and its cost report into the Plan value that is printed and exported.

#include "cluster/cluster.h"
#include "cost/graph_cost.h"
#include "plan/plan.h"
#include "planner/inputs.h"
#include "planner/plan_evaluation.h"
#include "rules/graph_sharding.h"
#include "sim/step_estimate.h"

namespace autopar::planner {

/// What the plan was evaluated with beyond its strategies.
struct PlanContext {
  const cost::EvaluateOptions& options;
  const sim::PipelineShape& pipeline;
  const std::vector<int>& virtualStageOf;  ///< per op
  const sim::StepEstimate& estimate;
  const cost::CostReport& report;
  size_t devicesPerStage = 1;
  /// Whether the plan fits on its estimate or on its memory band's top.
  ir::MemoryPolicy memoryPolicy = ir::MemoryPolicy::kExpected;
};

plan::Plan assemblePlan(const LoadedModel& model, const rules::GraphSharding& sharding,
                        const cost::CostReport& report, const PlanContext& context,
                        const cluster::Cluster& cluster, const std::string& clusterName);

/// The training setup a plan realises with `degrees` (tp, dp, cp, ep, sequence parallel) and
/// `microBatch` samples per data-parallel replica: the plan's pipeline, recompute, ZeRO stage
/// and batch, and the options' precision, framework (Megatron-Core when none is given), code
/// path, optimizer state and block placement.
ir::TrainingSetup setupOf(const ir::ParallelConfig& degrees, int64_t microBatch,
                          const plan::Plan& plan, const PlanOptions& options);

/// The Plan of an evaluation (planner/plan_evaluation.h) made with `options`: its strategies,
/// stages, features and estimate, the search mode and any propagation conflicts.
plan::Plan planOf(const Evaluated& evaluated, const PlanOptions& options,
                  const cluster::Cluster& cluster);

/// A redistribution step as a plan records it.
plan::StepRecord stepRecord(const layout::RedistStep& step);

/// A canonical one-line description of a cluster, hashed into the plan's inputs.
std::string describeCluster(const cluster::Cluster& cluster);

}  // namespace autopar::planner
