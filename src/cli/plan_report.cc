#include "cli/plan_report.h"

#include <fmt/format.h>

#include <map>

#include "cli/inputs.h"
#include "layout/strategy.h"

namespace autopar::cli {

namespace {

/// A run of ops sharing a block tag, in graph order.
struct BlockRun {
  std::string firstBlock;
  std::string lastBlock;
  int repeats = 1;
  std::vector<const plan::OpRecord*> ops;
};

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
    out +=
        fmt::format("  {:<16} x{:<6} {}\n", primitive, tally.count, formatSeconds(tally.seconds));
  }
}

void appendEstimate(std::string& out, const plan::Plan& plan) {
  const auto& estimate = plan.estimate;
  const auto& memory = estimate.memory;
  out += "\nEstimate per device (one micro-batch step, no pipeline)\n";
  out += fmt::format("  step time          {:>12}\n", formatSeconds(estimate.stepTimeSeconds));
  out += fmt::format("    compute          {:>12}\n", formatSeconds(estimate.computeSeconds));
  out += fmt::format("    communication    {:>12}\n", formatSeconds(estimate.communicationSeconds));
  out += fmt::format("    gradient sync    {:>12}\n", formatSeconds(estimate.gradientSyncSeconds));
  out += fmt::format("    optimizer        {:>12}\n", formatSeconds(estimate.optimizerSeconds));
  out +=
      fmt::format("  peak memory        {:>12} of {} ({})\n", formatBytes(estimate.peakMemoryBytes),
                  formatBytes(estimate.deviceMemoryBytes), estimate.fits ? "fits" : "DOES NOT FIT");
  out += fmt::format("    parameters       {:>12}\n", formatBytes(memory.parameters));
  out += fmt::format("    gradients        {:>12}\n", formatBytes(memory.gradients));
  out += fmt::format("    optimizer states {:>12}\n", formatBytes(memory.optimizerStates));
  out += fmt::format("    activations      {:>12}\n", formatBytes(memory.activations));
  out += fmt::format("    comm buffers     {:>12}\n", formatBytes(memory.communicationBuffers));
}

}  // namespace

std::string formatPlanReport(const plan::Plan& plan, const ReportHeader& header) {
  std::string out = fmt::format("autopar plan: {} on {} ({} x {}), search {}\n", header.model,
                                header.cluster, plan.devices, header.deviceName, plan.search);
  std::string shape;
  if (plan.inputs.microBatch > 0) {
    shape = fmt::format(", micro-batch {} per replica, sequence {}", plan.inputs.microBatch,
                        plan.inputs.sequence);
  }
  out += fmt::format("  {:.3f} B parameters{}, {} ops\n\n",
                     static_cast<double>(header.parameterCount) / 1e9, shape, plan.ops.size());
  appendStrategies(out, plan);
  appendRedistributions(out, plan);
  if (!plan.conflicts.empty()) {
    out += fmt::format("\nConflicts reconciled ({})\n", plan.conflicts.size());
    for (const auto& conflict : plan.conflicts) out += "  " + conflict + "\n";
  }
  appendEstimate(out, plan);
  return out;
}

}  // namespace autopar::cli
