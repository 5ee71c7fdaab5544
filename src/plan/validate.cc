#include "plan/validate.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/limits.h"

namespace autopar::plan {

namespace {

constexpr int64_t kMaxShare = limits::kMaxGlobalBatch;

Status validateStrategy(const OpRecord& record, const ir::Graph& graph, const ir::Op& op,
                        int64_t numDevices) {
  const auto where = [&](const std::string& what) {
    return fmt::format("ops '{}': {}", op.name, what);
  };
  if (record.strategy.size() != op.inputs.size()) {
    return Error{where(fmt::format("strategy has {} entries, expected one per input ({})",
                                   record.strategy.size(), op.inputs.size()))};
  }
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const ir::Shape& shape = graph.tensor(op.inputs[i]).type.shape;
    const auto& cuts = record.strategy[i];
    if (cuts.size() != shape.size()) {
      return Error{where(fmt::format("strategy[{}] has {} cuts, expected one per dim of {}", i,
                                     cuts.size(), ir::shapeToString(shape)))};
    }
    int64_t product = 1;
    for (size_t dim = 0; dim < cuts.size(); ++dim) {
      if (cuts[dim] < 1 || shape[dim] % cuts[dim] != 0) {
        return Error{
            where(fmt::format("strategy[{}] cuts dim {} of size {} into {}; expected a "
                              "positive divisor",
                              i, dim, shape[dim], cuts[dim]))};
      }
      product *= cuts[dim];
    }
    if (numDevices % product != 0) {
      return Error{
          where(fmt::format("strategy[{}] uses {} devices, which does not divide the {} "
                            "devices of the mesh",
                            i, product, numDevices))};
    }
  }
  return {};
}

/// The layer-level configuration agrees with the plan's pipeline, recompute and devices.
Status validateParallelConfig(const Plan& plan, int64_t numDevices) {
  const ir::ParallelConfig& c = *plan.setup;
  const auto mismatch = [](const std::string& field, const auto& value, const std::string& other,
                           const auto& otherValue) {
    return Error{
        fmt::format("parallel_config.{}: {} but {} is {}", field, value, other, otherValue)};
  };
  if (c.pp != plan.pipeline.stages) {
    return mismatch("pp", c.pp, "features.pipeline.stages", plan.pipeline.stages);
  }
  if (c.vpp != plan.pipeline.virtualStages) {
    return mismatch("vpp", c.vpp, "features.pipeline.virtual_stages", plan.pipeline.virtualStages);
  }
  if (c.schedule != plan.pipeline.schedule) {
    return mismatch("schedule", c.schedule, "features.pipeline.schedule", plan.pipeline.schedule);
  }
  if (c.recompute != plan.features.recompute) {
    return mismatch("recompute", c.recompute, "features.recompute.layers", plan.features.recompute);
  }
  const int64_t stageDevices = numDevices / c.pp;
  const int64_t perStage = c.tp * c.cp * c.dp;
  if (numDevices % c.pp != 0 || perStage > stageDevices || stageDevices % perStage != 0) {
    return Error{
        fmt::format("parallel_config: tp {} x cp {} x dp {} = {} devices per stage, which "
                    "does not divide the {} of each stage",
                    c.tp, c.cp, c.dp, perStage, stageDevices)};
  }
  if (c.dp % c.ep != 0) {
    return Error{
        fmt::format("parallel_config.ep: {} does not divide dp {} (expert parallelism "
                    "is carved out of the data-parallel ranks)",
                    c.ep, c.dp)};
  }
  return {};
}

/// Uneven data-parallel shares: one per replica of a configuration that fills each stage, each a
/// whole number of samples per micro-batch.
Status validateShares(const Plan& plan, int64_t numDevices) {
  const std::vector<int64_t>& shares = plan.dataParallelShares;
  if (shares.empty()) return {};
  if (!plan.setup) {
    return Error{"data_parallel_shares: needs parallel_config, whose dp replicas they share"};
  }
  const ir::ParallelConfig& c = *plan.setup;
  if (static_cast<int64_t>(shares.size()) != c.dp) {
    return Error{fmt::format("data_parallel_shares: {} shares, expected one per replica (dp {})",
                             shares.size(), c.dp)};
  }
  if (c.tp * c.cp * c.dp * c.pp != numDevices) {
    return Error{fmt::format(
        "data_parallel_shares: tp {} x cp {} x dp {} x pp {} leaves some of the {} devices idle; "
        "shares need every device in a replica",
        c.tp, c.cp, c.dp, c.pp, numDevices)};
  }
  const int64_t micro = std::max(plan.pipeline.microBatches, 1);
  for (size_t i = 0; i < shares.size(); ++i) {
    if (shares[i] < 1 || shares[i] > kMaxShare || shares[i] % micro != 0) {
      return Error{fmt::format(
          "data_parallel_shares[{}]: {}; expected a multiple of the {} micro-batches from 1 to {}",
          i, shares[i], micro, kMaxShare)};
    }
  }
  return {};
}

}  // namespace

Status validatePlan(const Plan& plan, const ir::Graph& graph, int64_t numDevices) {
  if (plan.devices != numDevices) {
    return Error{
        fmt::format("devices: plan is for {} devices, the mesh has {}", plan.devices, numDevices)};
  }
  // A pipelined plan lists stage 0's ranks; every stage runs on as many.
  int64_t stages = 1;
  for (const OpRecord& record : plan.ops) {
    if (record.stage < 0 || record.chunk < 0) {
      return Error{fmt::format("ops '{}': stage {} chunk {}; expected numbers from 0", record.name,
                               record.stage, record.chunk)};
    }
    stages = std::max<int64_t>(stages, record.stage + 1);
  }
  if (plan.pipeline.stages >= 1 && stages > plan.pipeline.stages) {
    return Error{fmt::format("ops[].stage: an op on stage {}, but features.pipeline.stages is {}",
                             stages - 1, plan.pipeline.stages)};
  }
  if (numDevices % stages != 0) {
    return Error{fmt::format("ops[].stage: {} pipeline stages do not divide {} devices", stages,
                             numDevices)};
  }
  const int64_t stageDevices = numDevices / stages;
  if (!plan.ranks.empty() && static_cast<int64_t>(plan.ranks.size()) != stageDevices) {
    return Error{fmt::format("ranks: {} listed, expected {} ({} devices over {} stages)",
                             plan.ranks.size(), stageDevices, numDevices, stages)};
  }
  // The runtime maps each listed rank to a device: distinct devices of the mesh.
  std::vector<int> sorted = plan.ranks;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty() && (sorted.front() < 0 || sorted.back() >= numDevices)) {
    return Error{fmt::format("ranks: {} is not a device of the {}-device mesh",
                             sorted.front() < 0 ? sorted.front() : sorted.back(), numDevices)};
  }
  if (auto repeated = std::adjacent_find(sorted.begin(), sorted.end()); repeated != sorted.end()) {
    return Error{fmt::format("ranks: device {} is listed twice", *repeated)};
  }
  if (plan.setup) {
    if (auto status = validateParallelConfig(plan, numDevices); !status) return status;
  }
  if (auto status = validateShares(plan, numDevices); !status) return status;
  if (plan.ops.size() != graph.ops().size()) {
    return Error{fmt::format("ops: plan has {} ops, graph '{}' has {}", plan.ops.size(),
                             graph.name(), graph.ops().size())};
  }
  for (const OpRecord& record : plan.ops) {
    auto id = graph.findOp(record.name);
    if (!id) return Error{fmt::format("ops '{}': not in graph '{}'", record.name, graph.name())};
    const ir::Op& op = graph.op(*id);
    if (record.kind != ir::opKindName(op.kind)) {
      return Error{fmt::format("ops '{}': kind {} but the graph has {}", record.name, record.kind,
                               ir::opKindName(op.kind))};
    }
    if (auto status = validateStrategy(record, graph, op, stageDevices); !status) return status;
  }
  return {};
}

}  // namespace autopar::plan
