#pragma once
/// \file
/// Turns a sharded graph and its cost report into the Plan value that is printed and exported.

#include "cli/inputs.h"
#include "cluster/cluster.h"
#include "cost/graph_cost.h"
#include "plan/plan.h"
#include "rules/graph_sharding.h"

namespace autopar::cli {

plan::Plan assemblePlan(const LoadedModel& model, const rules::GraphSharding& sharding,
                        const cost::CostReport& report, const cluster::Cluster& cluster,
                        const std::string& clusterName);

/// A redistribution step as a plan records it.
plan::StepRecord stepRecord(const layout::RedistStep& step);

/// A canonical one-line description of a cluster, hashed into the plan's inputs.
std::string describeCluster(const cluster::Cluster& cluster);

}  // namespace autopar::cli
