#include "export/plan_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "layout/strategy.h"
#include "planner/inputs.h"

namespace autopar::exporters {

namespace {

bool sameStrategies(const BlockRun& a, const BlockRun& b) {
  if (a.ops.size() != b.ops.size()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    if (a.ops[i]->kind != b.ops[i]->kind || a.ops[i]->strategy != b.ops[i]->strategy) return false;
  }
  return true;
}

/// "llm.layer.12" -> "llm.layer."; blocks fold only with blocks of the same family.
std::string blockFamily(const std::string& block) {
  const auto dot = block.find_last_of('.');
  return dot == std::string::npos ? block : block.substr(0, dot + 1);
}

std::string shapeList(const std::vector<int64_t>& values) {
  return fmt::format("[{}]", fmt::join(values, ","));
}

void appendStrategies(std::string& out, const plan::Plan& plan) {
  out += "Strategies (consecutive identical blocks folded)\n";
  for (const auto& run : foldBlocks(plan)) {
    const std::string title = run.firstBlock.empty() ? "(untagged)" : run.firstBlock;
    if (run.repeats == 1) {
      out += fmt::format("  block {}\n", title);
    } else {
      out += fmt::format("  blocks {} .. {} ({} blocks, identical strategies; ops of the first)\n",
                         title, run.lastBlock, run.repeats);
    }
    for (const auto* op : run.ops) {
      out += fmt::format("    {:<28} {:<15} {:<24} matrix {:<10} {}\n", op->name, op->kind,
                         layout::strategyToString(op->strategy), shapeList(op->deviceMatrix),
                         op->strategySource);
    }
  }
}

void appendRedistributions(std::string& out, const plan::Plan& plan) {
  struct Tally {
    int count = 0;
    double seconds = 0;
  };
  std::map<std::string, Tally> byPrimitive;
  int forward = 0;
  int backward = 0;
  int syncs = 0;
  for (const auto& record : plan.redistributions) {
    (record.direction == "forward" ? forward : backward) += 1;
    syncs += record.gradientSync ? 1 : 0;
    for (const auto& step : record.steps) {
      auto& tally = byPrimitive[step.primitive];
      ++tally.count;
      tally.seconds += step.seconds;
    }
  }
  out += fmt::format("\nRedistributions: {} forward, {} backward ({} gradient syncs)\n", forward,
                     backward, syncs);
  for (const auto& [primitive, tally] : byPrimitive) {
    out += fmt::format("  {:<16} x{:<6} {}\n", primitive, tally.count,
                       planner::formatSeconds(tally.seconds));
  }
}

std::string pipelineTitle(const plan::Plan& plan) {
  const auto& p = plan.pipeline;
  if (p.stages == 1) {
    return p.microBatches == 1 ? "one micro-batch step, no pipeline"
                               : fmt::format("{} micro-batches, no pipeline", p.microBatches);
  }
  const std::string chunks =
      p.virtualStages > 1 ? fmt::format(", {} chunks per stage", p.virtualStages) : "";
  return fmt::format("{} stages{}, {} micro-batches, schedule {}", p.stages, chunks, p.microBatches,
                     p.schedule);
}

void appendFeatures(std::string& out, const plan::Plan& plan) {
  const auto& f = plan.features;
  std::vector<std::string> lines;
  if (f.recompute != ir::Recompute::kNone)
    lines.push_back(fmt::format("recompute {}", f.recompute));
  int64_t recomputed = 0;
  int64_t onHost = 0;
  for (const auto& op : plan.ops) {
    recomputed += op.recomputed ? 1 : 0;
    onHost += op.placement == "host" ? 1 : 0;
  }
  if (recomputed > 0) lines.push_back(fmt::format("{} ops recomputed in backward", recomputed));
  if (onHost > 0) lines.push_back(fmt::format("{} ops on the host", onHost));
  if (f.optimizerParallel) {
    int64_t sharded = 0;
    for (const auto& p : plan.parameters) sharded += p.optimizerShards > 1 ? 1 : 0;
    const auto& peak =
        plan.estimate.stages.at(static_cast<size_t>(plan.estimate.fullestStage())).estimate;
    lines.push_back(fmt::format(
        "optimizer parallel{}: {} of {} parameters sharded (threshold "
        "{} KB); saves {} per device, adds {} of all-gathers and "
        "reduce-scatters",
        f.optimizerGroupUpdate ? " (group update)" : "", sharded, plan.parameters.size(),
        f.optimizerThresholdKb, planner::formatBytes(peak.optimizerParallelSavedBytes),
        planner::formatSeconds(peak.optimizerParallelCommSeconds)));
  }
  if (!plan.fusionGroups.empty()) {
    int64_t fused = 0;
    for (const auto& group : plan.fusionGroups) fused += group.parameters.size() > 1 ? 1 : 0;
    lines.push_back(fmt::format("communication fusion: {} groups ({} of several parameters)",
                                plan.fusionGroups.size(), fused));
  }
  if (lines.empty()) return;
  out += "\nFeatures\n";
  for (const auto& line : lines) out += "  " + line + "\n";
}

void appendStageTable(std::string& out, const plan::Plan& plan) {
  if (plan.estimate.stages.size() < 2) return;
  out += fmt::format("\n  {:<5} {:<30} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
                     "stage", "blocks", "fwd/mb", "bwd/mb", "flight", "params", "grads", "optim",
                     "activ", "comm", "peak");
  for (const auto& stage : plan.estimate.stages) {
    const std::string blocks =
        stage.blocks.empty() ? "" : stage.blocks.front() + " .. " + stage.blocks.back();
    const ir::StageEstimate& e = stage.estimate;
    const ir::MemoryBreakdown& m = e.memory;
    out +=
        fmt::format("  {:<5} {:<30} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
                    stage.stage, blocks.substr(0, 30), planner::formatSeconds(e.forwardSeconds),
                    planner::formatSeconds(e.backwardSeconds), e.peakInFlight,
                    planner::formatBytes(m.parameterBytes), planner::formatBytes(m.gradientBytes),
                    planner::formatBytes(m.optimizerBytes), planner::formatBytes(m.activationBytes),
                    planner::formatBytes(m.communicationBytes), planner::formatBytes(m.total()));
  }
}

void appendEstimate(std::string& out, const plan::Plan& plan) {
  const auto& estimate = plan.estimate;
  const auto& memory = estimate.memory;
  out += fmt::format("\nEstimate per device ({})\n", pipelineTitle(plan));
  out += fmt::format("  step time            {:>12}\n",
                     planner::formatSeconds(estimate.stepTimeSeconds));
  out += fmt::format("    compute            {:>12}\n",
                     planner::formatSeconds(estimate.computeSeconds));
  out += fmt::format("    exposed comm       {:>12}   (gradient sync {})\n",
                     planner::formatSeconds(estimate.communicationSeconds),
                     planner::formatSeconds(estimate.gradientSyncSeconds));
  if (plan.pipeline.stages > 1) {
    out += fmt::format("    pipeline bubble    {:>12}   ({:.1f}% of the busy time)\n",
                       planner::formatSeconds(estimate.bubbleSeconds),
                       100.0 * estimate.bubbleFraction);
  }
  out += fmt::format("    optimizer step     {:>12}\n",
                     planner::formatSeconds(estimate.optimizerSeconds));
  if (estimate.samplesPerStep > 0) {
    out += fmt::format("  samples per step     {:>12}\n", estimate.samplesPerStep);
  }
  if (estimate.tokensPerSecond > 0) {
    out += fmt::format("  throughput           {:>12.0f} tokens/s\n", estimate.tokensPerSecond);
  }
  out += fmt::format("  model TFLOP/s        {:>12.1f} per device (MFU {:.1f}%)\n",
                     estimate.tflopsPerDevice, 100 * estimate.mfu);
  const std::string where =
      estimate.stages.size() > 1 ? fmt::format(" on stage {}", plan.estimate.fullestStage()) : "";
  out += fmt::format("  peak memory{:<9} {:>12} of {} ({})\n", where,
                     planner::formatBytes(estimate.peakMemoryBytes),
                     planner::formatBytes(estimate.deviceMemoryBytes),
                     estimate.fits ? "fits" : "DOES NOT FIT");
  out +=
      fmt::format("    parameters         {:>12}\n", planner::formatBytes(memory.parameterBytes));
  out += fmt::format("    gradients          {:>12}\n", planner::formatBytes(memory.gradientBytes));
  out +=
      fmt::format("    optimizer states   {:>12}\n", planner::formatBytes(memory.optimizerBytes));
  out +=
      fmt::format("    activations        {:>12}\n", planner::formatBytes(memory.activationBytes));
  out +=
      fmt::format("    backward workspace {:>12}\n", planner::formatBytes(memory.workspaceBytes));
  out += fmt::format("    comm buffers       {:>12}\n",
                     planner::formatBytes(memory.communicationBytes));
  if (memory.hostBytes > 0) {
    out += fmt::format("    host (not counted) {:>12}\n", planner::formatBytes(memory.hostBytes));
  }
  if (!estimate.memoryVerdict.empty() &&
      estimate.memoryBandLowBytes < estimate.memoryBandHighBytes) {
    out += fmt::format(
        "  memory band          {} - {} (the measured error of its transient part): "
        "{}\n",
        planner::formatBytes(estimate.memoryBandLowBytes),
        planner::formatBytes(estimate.memoryBandHighBytes), estimate.memoryVerdict);
  }
  appendStageTable(out, plan);
}

}  // namespace

std::vector<BlockRun> foldBlocks(const plan::Plan& plan) {
  std::vector<BlockRun> runs;
  for (const auto& op : plan.ops) {
    if (runs.empty() || runs.back().lastBlock != op.block) {
      runs.push_back(BlockRun{op.block, op.block, 1, {}});
    }
    runs.back().ops.push_back(&op);
  }
  std::vector<BlockRun> folded;
  for (auto& run : runs) {
    if (!folded.empty() && blockFamily(folded.back().firstBlock) == blockFamily(run.firstBlock) &&
        !run.firstBlock.empty() && sameStrategies(folded.back(), run)) {
      folded.back().lastBlock = run.lastBlock;
      ++folded.back().repeats;
      continue;
    }
    folded.push_back(std::move(run));
  }
  return folded;
}

std::string formatPlanReport(const plan::Plan& plan, const ReportHeader& header) {
  std::string out = fmt::format("autopar plan: {} on {} ({} x {}), search {}\n", header.model,
                                header.cluster, plan.devices, header.deviceName, plan.search);
  std::string shape;
  if (plan.inputs.microBatch > 0) {
    shape = fmt::format(", micro-batch {} per replica, sequence {}", plan.inputs.microBatch,
                        plan.inputs.sequence);
  } else if (plan.inputs.sequence > 0) {
    // A batch the search cut as it could (an auto-parallel run yaml's): no share per replica.
    shape = fmt::format(", sequence {}", plan.inputs.sequence);
  }
  out += fmt::format("  {:.3f} B parameters{}, {} ops\n",
                     static_cast<double>(header.parameterCount) / 1e9, shape, plan.ops.size());
  if (plan.setup) {
    const ir::ParallelConfig& c = *plan.setup;
    out += fmt::format("  configuration {}{}, recompute {}, ZeRO {}\n", ir::shapeName(c),
                       c.vpp > 1 ? fmt::format(" VPP {}", c.vpp) : "", c.recompute, c.zero);
  }
  if (!plan.dataParallelShares.empty()) {
    out += fmt::format(
        "  data-parallel shares {} samples a step, in rank order (priced at the largest, "
        "micro-batch "
        "{}: that replica sets the step)\n",
        fmt::join(plan.dataParallelShares, " + "), plan.inputs.microBatch);
  }
  out += "\n";
  appendStrategies(out, plan);
  appendRedistributions(out, plan);
  if (!plan.conflicts.empty()) {
    out += fmt::format("\nConflicts reconciled ({})\n", plan.conflicts.size());
    for (const auto& conflict : plan.conflicts) out += "  " + conflict + "\n";
  }
  appendFeatures(out, plan);
  appendEstimate(out, plan);
  return out;
}

}  // namespace autopar::exporters
