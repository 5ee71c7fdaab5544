#pragma once
/// \file
/// MindFormers-style run yamls for `autopar plan --config`: the parallel settings, plan features,
/// batch and model they set, and seed 000's auto_pipeline.

#include <cstdint>

#include "cluster/cluster.h"
#include "frontend/mindformers_yaml.h"
#include "planner/plan_evaluation.h"
#include "util/expected.h"

namespace autopar::planner {

/// Applies a run yaml's settings and model to `options`, as MindFormers would, and sets
/// `options.configNote`. Returns the yaml read.
Expected<frontend::MindFormersConfig> applyRunYaml(PlanOptions& options, int64_t numDevices);

/// The device memory `options` let the framework use (PlanOptions::deviceMemoryCapBytes): the
/// cluster's devices with at most that much. A plan fits when its peak stays within it.
void capDeviceMemory(const PlanOptions& options, cluster::Cluster& cluster);

/// Seed 000's auto_pipeline: when the yaml turns it on, sets the stage count it chooses; when
/// off, notes which count it would choose. The choice and the counts tried go into configNote.
void applyAutoPipeline(PlanOptions& options, const frontend::MindFormersConfig& config,
                       const cluster::Cluster& cluster);

}  // namespace autopar::planner
