// Sequence parallelism (Korthikanti et al. 2022, Sec. 4.2.2; Megatron-LM --sequence-parallel)
// expressed as annotations must cost what the paper states: per transformer layer the forward
// all-reduce after each row-parallel matmul becomes a reduce-scatter along the sequence, and an
// all-gather along the sequence comes before each column-parallel matmul. A ring all-gather and a
// ring reduce-scatter each send (p-1)/p of the buffer, an all-reduce 2(p-1)/p, so the forward
// moves the same bytes with and without sequence parallelism.

#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <string>

#include "cluster/cluster.h"
#include "cost/graph_cost.h"
#include "frontend/transformer.h"
#include "planner/plan_evaluation.h"

namespace autopar {
namespace {

constexpr int kTensorParallel = 4;

using layout::PrimitiveKind;

/// The collectives of forward activation redistributions whose tensor is produced in `block`
/// (every block when empty).
struct ForwardCollectives {
  int allGathers = 0;
  int reduceScatters = 0;
  int allReduces = 0;
  int64_t bytesPerDevice = 0;
  std::set<std::string> gatheredFor;    ///< consumers of all-gathered tensors
  std::set<std::string> scatteredFrom;  ///< producers of reduce-scattered tensors
  std::set<int> collectiveDims;         ///< tensor dims gathered or scattered
};

ForwardCollectives forwardCollectives(const ir::Graph& graph, const cost::CostReport& report,
                                      const std::string& block) {
  ForwardCollectives result;
  for (const auto& edge : report.redistributions) {
    if (edge.direction != cost::EdgeDirection::kForward || edge.isGradientSync) continue;
    if (edge.producer == ir::kNoOp) continue;
    const ir::Op& producer = graph.op(edge.producer);
    if (!block.empty() && producer.block != block) continue;
    for (const auto& step : edge.redistribution.steps) {
      result.bytesPerDevice += step.bytesPerDevice;
      switch (step.kind) {
        case PrimitiveKind::kAllGather:
          ++result.allGathers;
          result.gatheredFor.insert(graph.op(edge.consumer).name);
          result.collectiveDims.insert(step.dim);
          break;
        case PrimitiveKind::kReduceScatter:
          ++result.reduceScatters;
          result.scatteredFrom.insert(producer.name);
          result.collectiveDims.insert(step.dim);
          break;
        case PrimitiveKind::kAllReduce:
          ++result.allReduces;
          break;
        default:
          break;
      }
    }
  }
  return result;
}

/// Backward activation-gradient bytes (gradient syncs of parameters excluded).
int64_t backwardActivationBytes(const cost::CostReport& report) {
  int64_t bytes = 0;
  for (const auto& edge : report.redistributions) {
    if (edge.direction != cost::EdgeDirection::kBackward || edge.isGradientSync) continue;
    bytes += edge.redistribution.bytesPerDevice;
  }
  return bytes;
}

/// GPT-style: LayerNorm, GeLU, learned positions, biases, tied head, hidden dropout 0.1.
frontend::TransformerConfig smallGpt() {
  frontend::TransformerConfig config;
  config.name = "small-gpt";
  config.layers = 2;
  config.hidden = 256;
  config.heads = 8;
  config.kvHeads = 8;
  config.ffn = 1024;
  config.vocab = 1024;
  config.seq = 128;
  config.microBatch = 2;
  config.mlp = frontend::TransformerConfig::Mlp::kGeLU;
  config.norm = frontend::TransformerConfig::Norm::kLayerNorm;
  config.position = frontend::TransformerConfig::Position::kLearned;
  config.linearBias = true;
  config.tiedEmbeddings = true;
  config.hiddenDropout = 0.1;
  config.parallel = ir::ParallelConfig{.tp = kTensorParallel, .dp = 1};
  return config;
}

struct Evaluated {
  ir::Graph graph;
  cost::CostReport report;
};

/// The config's semi-auto plan on kTensorParallel devices of a DGX A100, through the planner.
Evaluated evaluate(const frontend::TransformerConfig& config) {
  auto graph = frontend::buildTransformer(config);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  auto cluster = planner::loadCluster("dgx-a100-80g", 1, static_cast<int>(kTensorParallel));
  EXPECT_TRUE(cluster.ok());
  auto evaluated = planner::evaluateModel(planner::LoadedModel{.graph = *graph,
                                                               .source = config.name,
                                                               .microBatch = config.microBatch,
                                                               .sequence = config.seq},
                                          {}, *cluster);
  EXPECT_TRUE(evaluated.ok()) << evaluated.error().message;
  return {std::move(*graph), std::move(evaluated->report)};
}

std::string layerBlock(int64_t layer) { return "llm.layer." + std::to_string(layer); }

TEST(SequenceParallel, ForwardAllGathersBeforeColumnAndReduceScattersAfterRowParallelMatmuls) {
  auto config = smallGpt();
  config.parallel->sequenceParallel = true;
  const Evaluated sp = evaluate(config);
  if (HasFailure()) return;
  for (int64_t layer = 0; layer < config.layers; ++layer) {
    const std::string prefix = "layer" + std::to_string(layer);
    const auto comm = forwardCollectives(sp.graph, sp.report, layerBlock(layer));
    EXPECT_EQ(comm.allReduces, 0) << prefix;
    // One all-gather feeds q, k and v (same layout, so one redistribution named for q_proj).
    EXPECT_EQ(comm.allGathers, 2) << prefix;
    EXPECT_EQ(comm.gatheredFor,
              (std::set<std::string>{prefix + ".attn.q_proj", prefix + ".mlp.fc1"}));
    EXPECT_EQ(comm.reduceScatters, 2) << prefix;
    EXPECT_EQ(comm.scatteredFrom,
              (std::set<std::string>{prefix + ".attn.o_proj", prefix + ".mlp.fc2"}));
    EXPECT_EQ(comm.collectiveDims, (std::set<int>{1})) << prefix << ": only s is gathered";
  }
}

TEST(SequenceParallel, ForwardMovesTheSameBytesAsTensorParallelAllReduces) {
  auto config = smallGpt();
  const Evaluated plain = evaluate(config);
  config.parallel->sequenceParallel = true;
  const Evaluated sp = evaluate(config);
  if (HasFailure()) return;
  // Without sequence parallelism, per layer: 2 all-reduces of b*s*h bf16 elements, each sending
  // 2(p-1)/p of the buffer.
  const int64_t bshBytes = config.microBatch * config.seq * config.hidden * 2;
  const int64_t allReduceBytes = bshBytes * 2 * (kTensorParallel - 1) / kTensorParallel;
  for (int64_t layer = 0; layer < config.layers; ++layer) {
    const auto without = forwardCollectives(plain.graph, plain.report, layerBlock(layer));
    const auto with = forwardCollectives(sp.graph, sp.report, layerBlock(layer));
    EXPECT_EQ(without.allReduces, 2) << "layer " << layer;
    EXPECT_EQ(without.bytesPerDevice, 2 * allReduceBytes) << "layer " << layer;
    EXPECT_NEAR(static_cast<double>(with.bytesPerDevice),
                static_cast<double>(without.bytesPerDevice),
                0.01 * static_cast<double>(without.bytesPerDevice))
        << "layer " << layer;
  }
  // The whole graph too: the embedding's all-reduce becomes a reduce-scatter, and the final
  // norm's output is all-gathered for the LM head.
  const auto without = forwardCollectives(plain.graph, plain.report, "");
  const auto with = forwardCollectives(sp.graph, sp.report, "");
  EXPECT_EQ(with.allReduces, 0);
  EXPECT_NEAR(static_cast<double>(with.bytesPerDevice), static_cast<double>(without.bytesPerDevice),
              0.01 * static_cast<double>(without.bytesPerDevice));
  // Backward mirrors the forward (all-gather <-> reduce-scatter), so it moves the same bytes too.
  EXPECT_NEAR(static_cast<double>(backwardActivationBytes(sp.report)),
              static_cast<double>(backwardActivationBytes(plain.report)),
              0.01 * static_cast<double>(backwardActivationBytes(plain.report)));
}

/// Bytes per device of the `kind` steps of activation redistributions in `direction` whose
/// tensor an op of `block` made.
int64_t bytesOf(const ir::Graph& graph, const cost::CostReport& report, const std::string& block,
                cost::EdgeDirection direction, PrimitiveKind kind) {
  int64_t bytes = 0;
  for (const auto& edge : report.redistributions) {
    if (edge.direction != direction || edge.isGradientSync) continue;
    if (edge.producer == ir::kNoOp || graph.op(edge.producer).block != block) continue;
    for (const auto& step : edge.redistribution.steps) {
      if (step.kind == kind) bytes += step.bytesPerDevice;
    }
  }
  return bytes;
}

// Under fp8 a linear layer's input is cast to fp8 before the sequence all-gather, and so is the
// gradient of its output before the backward all-gather (Transformer Engine's LayerNormLinear and
// Linear; torchao's Float8ColwiseParallel and Float8RowwiseParallel): those gathers move one byte
// an element. The reduce-scatters sum partial results and stay bf16.
TEST(SequenceParallel, Fp8GathersMoveOneByteAnElementAndReductionsStayBf16) {
  auto config = smallGpt();
  config.parallel->sequenceParallel = true;
  config.dtype = ir::DType::kBF16;
  const Evaluated bf16 = evaluate(config);
  config.dtype = ir::DType::kFP8;
  const Evaluated fp8 = evaluate(config);
  if (HasFailure()) return;
  const int64_t bshBytes = config.microBatch * config.seq * config.hidden * 2;
  const int64_t gatherBytes = bshBytes * (kTensorParallel - 1) / kTensorParallel;
  using cost::EdgeDirection;
  for (int64_t layer = 0; layer < config.layers; ++layer) {
    const std::string block = layerBlock(layer);
    ASSERT_EQ(forwardCollectives(fp8.graph, fp8.report, block).allGathers, 2) << block;
    ASSERT_EQ(forwardCollectives(fp8.graph, fp8.report, block).reduceScatters, 2) << block;
    for (EdgeDirection direction : {EdgeDirection::kForward, EdgeDirection::kBackward}) {
      const auto of = [&](const Evaluated& e, PrimitiveKind kind) {
        return bytesOf(e.graph, e.report, block, direction, kind);
      };
      // Forward, the inputs of q/k/v and fc1 (made by the layer's norms); backward, the
      // gradients of o_proj's and fc2's outputs: two gathers, in fp8.
      EXPECT_EQ(of(bf16, PrimitiveKind::kAllGather), 2 * gatherBytes) << block;
      EXPECT_EQ(of(fp8, PrimitiveKind::kAllGather), gatherBytes) << block;
      // The reduce-scatters of o_proj's and fc2's outputs (forward) and of the norms' output
      // gradients (backward) sum partial results: bf16 either way.
      EXPECT_EQ(of(bf16, PrimitiveKind::kReduceScatter), 2 * gatherBytes) << block;
      EXPECT_EQ(of(fp8, PrimitiveKind::kReduceScatter), 2 * gatherBytes) << block;
    }
  }
  // The LM head runs in bf16 (Transformer Engine's recipe leaves it out): the final norm's output
  // is gathered for it in bf16 under either precision.
  const int64_t headGather =
      bytesOf(bf16.graph, bf16.report, "head", EdgeDirection::kForward, PrimitiveKind::kAllGather);
  EXPECT_GT(headGather, 0);
  EXPECT_EQ(
      bytesOf(fp8.graph, fp8.report, "head", EdgeDirection::kForward, PrimitiveKind::kAllGather),
      headGather);
}

}  // namespace
}  // namespace autopar
