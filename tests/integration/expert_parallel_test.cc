// Expert parallelism as Megatron-Core runs it (the all-to-all token dispatcher), expressed as the
// transformer builder's annotations and costed by the generic engine: the dispatched tokens reach
// their experts' ranks by an all-to-all over the expert-parallel group and come back by another;
// the experts' weights split over that group, so their gradients are summed over the
// expert-data-parallel ranks only (DP / EP); the experts' compute per device does not depend on
// EP.

#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "cluster/cluster.h"
#include "cost/graph_cost.h"
#include "frontend/transformer.h"
#include "planner/plan_evaluation.h"

namespace autopar {
namespace {

constexpr int kDevices = 8;
constexpr int64_t kPerReplica = 2;  ///< micro-batch per data-parallel replica

using layout::PrimitiveKind;

/// One layer, 8 experts of width 512, 2 per token: 256 x 2 / 8 = 64 slots per sample and expert.
frontend::TransformerConfig smallMoE(int64_t dp, int64_t tp, int64_t ep) {
  frontend::TransformerConfig config;
  config.name = "small-moe";
  config.layers = 1;
  config.hidden = 256;
  config.heads = 8;
  config.kvHeads = 8;
  config.ffn = 512;
  config.vocab = 1024;
  config.seq = 256;
  config.experts = 8;
  config.topK = 2;
  config.microBatch = kPerReplica * dp;
  config.parallel = ir::ParallelConfig{.tp = tp, .dp = dp, .ep = ep, .sequenceParallel = tp > 1};
  return config;
}

struct Evaluated {
  ir::Graph graph;
  cost::CostReport report;
};

Evaluated evaluate(const frontend::TransformerConfig& config) {
  auto graph = frontend::buildTransformer(config);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  auto cluster = planner::loadCluster("dgx-a100-80g", 1, kDevices);
  EXPECT_TRUE(cluster.ok());
  // Megatron-Core's token dispatcher moves tokens to their experts' ranks with all-to-all.
  planner::PlanOptions options;
  options.enableAllToAll = true;
  auto evaluated = planner::evaluateModel(planner::LoadedModel{.graph = *graph,
                                                               .source = config.name,
                                                               .microBatch = config.microBatch,
                                                               .sequence = config.seq},
                                          options, *cluster);
  EXPECT_TRUE(evaluated.ok()) << evaluated.error().message;
  return {std::move(*graph), std::move(evaluated->report)};
}

/// The collective steps of the edges into (forward) or out of (backward) the op `name`, from its
/// producer or to it, as "kind/group size/bytes sent".
std::vector<std::string> edgeSteps(const Evaluated& e, const std::string& consumer,
                                   cost::EdgeDirection direction) {
  const ir::OpId op = *e.graph.findOp(consumer);
  std::vector<std::string> steps;
  for (const auto& edge : e.report.redistributions) {
    if (edge.consumer != op || edge.direction != direction || edge.isGradientSync) continue;
    for (const auto& step : edge.redistribution.steps) {
      if (step.bytesPerDevice == 0) continue;
      steps.push_back(std::string(layout::primitiveName(step.kind)) + "/" +
                      std::to_string(step.matrix.axisSize(step.axis)) + "/" +
                      std::to_string(step.bytesPerDevice));
    }
  }
  return steps;
}

/// The gradient synchronisation steps of a parameter, as edgeSteps writes them.
std::vector<std::string> gradientSync(const Evaluated& e, const std::string& parameter) {
  const ir::TensorId tensor = *e.graph.findTensor(parameter);
  std::vector<std::string> steps;
  for (const auto& edge : e.report.redistributions) {
    if (edge.tensor != tensor || !edge.isGradientSync) continue;
    for (const auto& step : edge.redistribution.steps) {
      steps.push_back(std::string(layout::primitiveName(step.kind)) + "/" +
                      std::to_string(step.matrix.axisSize(step.axis)));
    }
  }
  return steps;
}

// A device's dispatched slots: 2 samples x 8 experts x 64 slots x 256 wide, bf16 = 512 KiB; the
// all-to-all over 4 ranks sends 3/4 of them.
constexpr int64_t kSlotBytes = kPerReplica * 8 * 64 * 256 * 2;

TEST(ExpertParallel, TokensMoveByAllToAllOverTheExpertGroup) {
  const Evaluated moe = evaluate(smallMoE(8, 1, 4));
  if (HasFailure()) return;
  const std::string a2a = "all_to_all/4/" + std::to_string(kSlotBytes * 3 / 4);
  // Dispatch to the experts (one edge feeds gate_proj and up_proj alike), and back to combine.
  const auto toExperts =
      edgeSteps(moe, "layer0.moe.experts.gate_proj", cost::EdgeDirection::kForward);
  EXPECT_EQ(toExperts, (std::vector<std::string>{a2a}));
  EXPECT_EQ(edgeSteps(moe, "layer0.moe.combine", cost::EdgeDirection::kForward),
            (std::vector<std::string>{a2a}));
  // Without expert parallelism the tokens stay on their ranks.
  const Evaluated local = evaluate(smallMoE(8, 1, 1));
  if (HasFailure()) return;
  EXPECT_TRUE(
      edgeSteps(local, "layer0.moe.experts.gate_proj", cost::EdgeDirection::kForward).empty());
  EXPECT_TRUE(edgeSteps(local, "layer0.moe.combine", cost::EdgeDirection::kForward).empty());
}

// With TP 2 and sequence parallelism (DP 4, EP 2): forward, the all-to-all over EP, then the
// sequence gathered over TP; back, the row-parallel partial sums reduce-scattered over TP first,
// then the all-to-all, as Megatron-Core orders them.
TEST(ExpertParallel, TensorParallelExpertsGatherAfterAndReduceScatterBeforeTheAllToAll) {
  const Evaluated moe = evaluate(smallMoE(4, 2, 2));
  if (HasFailure()) return;
  // A device holds its 2 samples' slots for half the sequence: 256 KiB; the all-to-all sends
  // half of them, the all-gather half of the 512 KiB it gathers. Back, the reduce-scatter sends
  // half of the 512 KiB partial sums and the all-to-all half of what is left.
  const int64_t local = kSlotBytes / 2;
  EXPECT_EQ(edgeSteps(moe, "layer0.moe.experts.gate_proj", cost::EdgeDirection::kForward),
            (std::vector<std::string>{"all_to_all/2/" + std::to_string(local / 2),
                                      "all_gather/2/" + std::to_string(local)}));
  EXPECT_EQ(edgeSteps(moe, "layer0.moe.combine", cost::EdgeDirection::kForward),
            (std::vector<std::string>{"reduce_scatter/2/" + std::to_string(local),
                                      "all_to_all/2/" + std::to_string(local / 2)}));
}

TEST(ExpertParallel, ExpertGradientsSumOverTheExpertDataParallelRanks) {
  const Evaluated ep4 = evaluate(smallMoE(8, 1, 4));
  const Evaluated ep8 = evaluate(smallMoE(8, 1, 8));
  if (HasFailure()) return;
  EXPECT_EQ(gradientSync(ep4, "layer0.attn.q_proj.weight"),
            (std::vector<std::string>{"all_reduce/8"}));
  EXPECT_EQ(gradientSync(ep4, "layer0.moe.experts.down_proj.weight"),
            (std::vector<std::string>{"all_reduce/2"}));
  // EP as wide as DP: every expert lives on one rank, nothing to sum.
  EXPECT_TRUE(gradientSync(ep8, "layer0.moe.experts.down_proj.weight").empty());
}

TEST(ExpertParallel, ExpertWeightsSplitAndComputeStays) {
  const Evaluated ep1 = evaluate(smallMoE(8, 1, 1));
  const Evaluated ep8 = evaluate(smallMoE(8, 1, 8));
  if (HasFailure()) return;
  // Three expert linears of 8 x 256 x 512 bf16: 6 MiB, one eighth of them per device with EP 8.
  const int64_t expertBytes = 3 * 8 * 256 * 512 * 2;
  EXPECT_EQ(ep1.report.memory.parameterBytes - ep8.report.memory.parameterBytes,
            expertBytes - expertBytes / 8);
  const ir::OpId up = *ep1.graph.findOp("layer0.moe.experts.up_proj");
  EXPECT_DOUBLE_EQ(ep1.report.ops[static_cast<size_t>(up)].forwardFlops,
                   ep8.report.ops[static_cast<size_t>(up)].forwardFlops);
  // Each device runs its 2 samples' tokens through 2 experts: 2 x 256 x 2 x 256 x 512 x 2 FLOPs.
  EXPECT_DOUBLE_EQ(ep8.report.ops[static_cast<size_t>(up)].forwardFlops,
                   2.0 * kPerReplica * 256 * 2 * 256 * 512);
}

}  // namespace
}  // namespace autopar
