// What Megatron-LM's kernels and communication overlaps change in the cost of a GPT layer under
// tensor parallelism 4: the fused bias-GeLU and bias-dropout-add kernels (intermediates between
// elementwise ops stay on chip), and the overlap of tensor-parallel communication with the
// matmuls (--tp-comm-overlap both passes, --async-tensor-model-parallel-allreduce backward only),
// and weight-gradient accumulation by a separate kernel (--no-gradient-accumulation-fusion); the
// mixture-of-experts token exchange, which only its own switch overlaps; what a fused SwiGLU
// keeps for its backward; the rotary embedding's eager fp32 passes; and the gradient sync run in
// place in the gradient buffer.

#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "cost/constants.h"
#include "cost/graph_cost.h"
#include "frontend/transformer.h"
#include "rules/graph_sharding.h"

namespace autopar {
namespace {

constexpr int64_t kTensorParallel = 4;

struct Layer {
  ir::Graph graph;
  rules::GraphSharding sharding;
  cluster::Cluster cluster;
};

/// `config` built and sharded by its annotations on the first `devices` devices of a DGX A100.
Layer onFirstDevices(const frontend::TransformerConfig& config, int devices) {
  auto graph = frontend::buildTransformer(config);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  EXPECT_TRUE(cluster.ok());
  auto taken = cluster::takeDevices(*cluster, devices);
  EXPECT_TRUE(taken.ok());
  std::vector<int> ranks(static_cast<size_t>(devices));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto sharding = rules::shardGraph(*graph, ranks);
  EXPECT_TRUE(sharding.ok()) << sharding.error().message;
  return Layer{std::move(*graph), std::move(*sharding), std::move(*taken)};
}

/// One layer of hidden size 1024 and 16 heads, a vocabulary of 1024, 512 tokens and a micro-batch
/// of 2 (the whole model's, split by dp), named `name`; the layers below set the rest.
frontend::TransformerConfig oneLayer(const std::string& name, int64_t kvHeads, int64_t ffn) {
  frontend::TransformerConfig config;
  config.name = name;
  config.layers = 1;
  config.hidden = 1024;
  config.heads = 16;
  config.kvHeads = kvHeads;
  config.ffn = ffn;
  config.vocab = 1024;
  config.seq = 512;
  config.microBatch = 2;
  return config;
}

/// One GPT-style layer (biases, LayerNorm, GeLU, hidden dropout 0.1) at TP 4.
Layer gptLayer(bool sequenceParallel = false) {
  frontend::TransformerConfig config = oneLayer("gpt-layer", 16, 4096);
  config.mlp = frontend::TransformerConfig::Mlp::kGeLU;
  config.norm = frontend::TransformerConfig::Norm::kLayerNorm;
  config.position = frontend::TransformerConfig::Position::kLearned;
  config.linearBias = true;
  config.hiddenDropout = 0.1;
  config.parallel =
      ir::ParallelConfig{.tp = kTensorParallel, .dp = 1, .sequenceParallel = sequenceParallel};
  return onFirstDevices(config, kTensorParallel);
}

/// One LLaMA-style layer (RMSNorm, SwiGLU, no biases) at TP 2 x DP 2 on 4 devices of a node.
Layer llamaLayer() {
  frontend::TransformerConfig config = oneLayer("llama-layer", 4, 2816);
  config.parallel = ir::ParallelConfig{.tp = 2, .dp = 2};
  return onFirstDevices(config, 4);
}

/// One Mixtral-style layer, 8 experts with 2 per token, on TP 2 x EP 2 (4 devices of a node),
/// sequence parallel: the dispatched tokens travel to the experts' ranks and back.
Layer moeLayer() {
  frontend::TransformerConfig config = oneLayer("moe-layer", 4, 2048);
  config.experts = 8;
  config.topK = 2;
  config.parallel = ir::ParallelConfig{.tp = 2, .dp = 2, .ep = 2, .sequenceParallel = true};
  return onFirstDevices(config, 4);
}

cost::CostReport evaluate(const Layer& layer, const cost::EvaluateOptions& options) {
  auto report = cost::evaluateGraph(layer.graph, layer.sharding.ops, layer.cluster, options);
  EXPECT_TRUE(report.ok()) << report.error().message;
  return std::move(*report);
}

/// The HBM bandwidth the cost model prices memory-bound work at on the layer's device.
double fittedBandwidth(const Layer& layer) {
  return layer.cluster.device.memoryBytesPerSecond *
         cost::shippedCostModel()->forDevice(layer.cluster.device.name).memoryEfficiency;
}

/// The layer costed with one kernel per op (PyTorch eager), then with elementwise fusion.
struct EagerAndFused {
  cost::CostReport eager;
  cost::CostReport fused;
};
EagerAndFused eagerAndFused(const Layer& layer) {
  cost::EvaluateOptions options;
  EagerAndFused both{evaluate(layer, options), {}};
  options.codePath.fusedElementwise = true;
  both.fused = evaluate(layer, options);
  return both;
}

double forwardSecondsOf(const Layer& layer, const cost::CostReport& report,
                        const std::string& name) {
  const auto id = layer.graph.findOp(name);
  EXPECT_TRUE(id.has_value()) << name;
  return id ? report.ops[static_cast<size_t>(*id)].forwardSeconds : 0.0;
}

TEST(MegatronKernels, BiasDropoutAddRunsAsOneKernel) {
  const Layer layer = gptLayer();
  const auto [unfused, fused] = eagerAndFused(layer);
  // The MLP's bias add, dropout and residual add: the two intermediates between them are
  // neither written nor read back, so each op moves less, and the dropout and the residual add
  // run inside the bias add's kernel (no launch of their own).
  double fusedChain = 0;
  double unfusedChain = 0;
  for (const char* name :
       {"layer0.mlp.fc2.bias_add", "layer0.mlp.dropout", "layer0.mlp.residual"}) {
    EXPECT_LE(forwardSecondsOf(layer, fused, name), forwardSecondsOf(layer, unfused, name)) << name;
    fusedChain += forwardSecondsOf(layer, fused, name);
    unfusedChain += forwardSecondsOf(layer, unfused, name);
  }
  EXPECT_LT(forwardSecondsOf(layer, fused, "layer0.mlp.residual"),
            forwardSecondsOf(layer, unfused, "layer0.mlp.residual"));
  EXPECT_LT(fusedChain, 0.75 * unfusedChain);
  // The matmul feeding the bias add and the LayerNorm after the residual are not elementwise:
  // unchanged.
  EXPECT_EQ(forwardSecondsOf(layer, fused, "layer0.mlp.fc2"),
            forwardSecondsOf(layer, unfused, "layer0.mlp.fc2"));
  EXPECT_EQ(forwardSecondsOf(layer, fused, "layer0.mlp_norm"),
            forwardSecondsOf(layer, unfused, "layer0.mlp_norm"));
  EXPECT_LT(fused.stages[0].forwardComputeSeconds, unfused.stages[0].forwardComputeSeconds);
  EXPECT_LT(fused.stages[0].backwardComputeSeconds, unfused.stages[0].backwardComputeSeconds);
}

TEST(MegatronKernels, CommunicationOverlapHidesTensorParallelTraffic) {
  const Layer layer = gptLayer();
  cost::EvaluateOptions options;
  const cost::CostReport plain = evaluate(layer, options);
  ASSERT_GT(plain.stages[0].forwardCommSeconds, 0.0);
  ASSERT_GT(plain.stages[0].backwardCommSeconds, 0.0);
  options.codePath.asyncTpAllreduce = true;
  const cost::CostReport backwardOnly = evaluate(layer, options);
  // The backward all-reduces run under the backward matmuls, which take longer; the forward's
  // stay exposed.
  EXPECT_EQ(backwardOnly.stages[0].forwardCommSeconds, plain.stages[0].forwardCommSeconds);
  EXPECT_EQ(backwardOnly.stages[0].backwardCommSeconds, 0.0);
  // Transformer Engine's userbuffers overlap an all-gather or a reduce-scatter with its GEMM, not
  // an all-reduce: without sequence parallelism the forward's all-reduces stay exposed.
  options.codePath.tpCommOverlap = true;
  const cost::CostReport allReduces = evaluate(layer, options);
  ASSERT_GT(allReduces.stages[0].forwardAllReduceSeconds, 0.0);
  EXPECT_DOUBLE_EQ(allReduces.stages[0].forwardCommSeconds,
                   allReduces.stages[0].forwardAllReduceSeconds);
  EXPECT_GT(allReduces.stages[0].forwardAllReduceSeconds, plain.stages[0].forwardCommSeconds / 2);
  // With it, the same traffic is all-gathers and reduce-scatters, which run under the GEMMs.
  const Layer sequenceParallel = gptLayer(/*sequenceParallel=*/true);
  const cost::CostReport gathers = evaluate(sequenceParallel, options);
  options.codePath.tpCommOverlap = false;
  const cost::CostReport exposed = evaluate(sequenceParallel, options);
  ASSERT_GT(exposed.stages[0].forwardCommSeconds, 0.0);
  EXPECT_EQ(gathers.stages[0].forwardCommSeconds, 0.0);
  EXPECT_LT(gathers.stages[0].forwardSeconds, exposed.stages[0].forwardSeconds);
}

// Megatron-Core before 0.14 waits on the token all-to-all: --tp-comm-overlap hides the tensor-
// parallel traffic but not the exchange; --overlap-moe-expert-parallel-comm hides that too.
TEST(MegatronKernels, ExpertExchangeStaysExposedUnderTensorParallelOverlap) {
  const Layer layer = moeLayer();
  cost::EvaluateOptions options;
  const cost::CostReport plain = evaluate(layer, options);
  const cost::StageCost& stage = plain.stages[0];
  ASSERT_GT(stage.forwardExchangeSeconds, 0.0);
  ASSERT_GT(stage.backwardExchangeSeconds, 0.0);
  ASSERT_GT(stage.forwardCommSeconds, stage.forwardExchangeSeconds);
  options.codePath.tpCommOverlap = true;
  const cost::CostReport tpOverlap = evaluate(layer, options);
  EXPECT_DOUBLE_EQ(tpOverlap.stages[0].forwardCommSeconds, stage.forwardExchangeSeconds);
  EXPECT_DOUBLE_EQ(tpOverlap.stages[0].backwardCommSeconds, stage.backwardExchangeSeconds);
  options.codePath.overlapExpertComm = true;
  const cost::CostReport both = evaluate(layer, options);
  EXPECT_EQ(both.stages[0].forwardCommSeconds, 0.0);
  EXPECT_EQ(both.stages[0].backwardCommSeconds, 0.0);
}

// Megatron-Core's router and token dispatcher run dozens of small kernels per layer, and
// SequentialMLP a few more per local expert: EP 2 leaves 4 of the 8 experts on each rank.
TEST(MegatronKernels, RouterDispatcherAndSequentialExpertsPayTheirSmallKernels) {
  const Layer layer = moeLayer();
  const cost::CostReport report = evaluate(layer, cost::EvaluateOptions{});
  const double queued = cost::shippedCostModel()->queuedKernelSeconds;
  ASSERT_GT(queued, 0.0);
  const auto dispatch = layer.graph.findOp("layer0.moe.dispatch");
  const auto combine = layer.graph.findOp("layer0.moe.combine");
  ASSERT_TRUE(dispatch && combine);
  const cost::OpCost& routed = report.ops[static_cast<size_t>(*dispatch)];
  const cost::OpCost& combined = report.ops[static_cast<size_t>(*combine)];
  EXPECT_GE(routed.forwardSeconds, 27 * queued);
  EXPECT_GE(routed.backwardSeconds, 23 * queued);
  constexpr double kLocalExperts = 4;
  EXPECT_GE(combined.forwardSeconds, (3 + 2 * kLocalExperts) * queued);
  EXPECT_GE(combined.backwardSeconds, (5 + 6 * kLocalExperts) * queued);
}

TEST(MegatronKernels, UnfusedGradientAccumulationStreamsEveryWeightEachMicroBatch) {
  const Layer layer = gptLayer();
  cost::EvaluateOptions options;
  const cost::CostReport fused = evaluate(layer, options);
  options.codePath.gradientAccumulationFusion = false;
  const cost::CostReport unfused = evaluate(layer, options);
  options.optimizer.fp32Gradients = false;
  const cost::CostReport unfused16 = evaluate(layer, options);
  // Per weight element of the device's slices: the new gradient read in the weight's dtype, the
  // accumulator (fp32, or the weight's dtype) read and written, at the fitted HBM bandwidth.
  double bytes32 = 0;
  double bytes16 = 0;
  for (const cost::ParameterPlacement& placement : fused.parameters) {
    const auto elements = static_cast<double>(placement.use.sliceElements());
    const auto weight =
        static_cast<double>(ir::dtypeBytes(layer.graph.tensor(placement.tensor).type.dtype));
    bytes32 += elements * (weight + 2 * 4);
    bytes16 += elements * 3 * weight;
  }
  ASSERT_GT(bytes32, 0.0);
  const double bandwidth = fittedBandwidth(layer);
  const double base = fused.stages[0].backwardComputeSeconds;
  EXPECT_NEAR(unfused.stages[0].backwardComputeSeconds - base, bytes32 / bandwidth, 1e-12);
  EXPECT_NEAR(unfused16.stages[0].backwardComputeSeconds - base, bytes16 / bandwidth, 1e-12);
  EXPECT_EQ(unfused.stages[0].forwardComputeSeconds, fused.stages[0].forwardComputeSeconds);
}

TEST(MegatronKernels, FusedSwigluKeepsTheGateAndTheUpProjectionOnly) {
  const Layer layer = llamaLayer();
  cost::EvaluateOptions options;
  const int64_t eager = evaluate(layer, options).stages[0].memory.activationBytes;
  options.codePath.fusedElementwise = true;
  const int64_t fused = evaluate(layer, options).stages[0].memory.activationBytes;
  // silu(gate) is made again from the gate in the fused kernel's backward, so the product no
  // longer keeps it: one [b/dp, s, ffn/tp] bf16 tensor less per device.
  const int64_t siluOutput = (2 / 2) * 512 * (2816 / 2) * 2;
  EXPECT_EQ(eager - fused, siluOutput);
  // A GeLU's output feeds a matmul, which is not elementwise: the GPT layer keeps it either way.
  const Layer gpt = gptLayer();
  cost::EvaluateOptions gptOptions;
  const int64_t gptEager = evaluate(gpt, gptOptions).stages[0].memory.activationBytes;
  gptOptions.codePath.fusedElementwise = true;
  EXPECT_EQ(evaluate(gpt, gptOptions).stages[0].memory.activationBytes, gptEager);
}

TEST(MegatronKernels, EagerRotaryMakesThreeFp32Passes) {
  const Layer layer = llamaLayer();
  const auto [eager, fused] = eagerAndFused(layer);
  const double bandwidth = fittedBandwidth(layer);
  int rotaries = 0;
  for (const ir::Op& op : layer.graph.ops()) {
    if (op.kind != ir::OpKind::kRotary) continue;
    ++rotaries;
    const auto index = static_cast<size_t>(op.id);
    // torchtitan's apply_rotary_emb in eager mode: the bf16 query or key upcast to fp32, the
    // complex product, the cast back; one fused kernel reads and writes each element once.
    const auto elements = static_cast<double>(layer.sharding.ops[index].outputs[0].sliceElements());
    const double extra = 16 * elements / bandwidth;
    EXPECT_NEAR(eager.ops[index].forwardSeconds - fused.ops[index].forwardSeconds, extra, 1e-12);
    EXPECT_NEAR(eager.ops[index].backwardSeconds - fused.ops[index].backwardSeconds, extra, 1e-12);
  }
  EXPECT_EQ(rotaries, 2);  // the query's and the key's
}

TEST(MegatronKernels, GradientSyncInPlaceNeedsNoCommunicationBuffer) {
  const Layer layer = llamaLayer();
  cost::EvaluateOptions options;
  const cost::CostReport staged = evaluate(layer, options);
  options.codePath.gradientSyncInPlace = true;
  const cost::CostReport inPlace = evaluate(layer, options);
  int64_t largestGradientStep = 0;
  int64_t largestActivationStep = 0;
  for (const cost::EdgeRedistribution& edge : staged.redistributions) {
    int64_t& largest = edge.isGradientSync ? largestGradientStep : largestActivationStep;
    for (const auto& step : edge.redistribution.steps) {
      largest = std::max(largest, step.bytesPerDevice);
    }
  }
  // The data-parallel all-reduce of the gate or up projection's gradient outweighs any
  // activation collective of this layer, so it sizes the staged buffer.
  ASSERT_GT(largestGradientStep, largestActivationStep);
  EXPECT_EQ(staged.stages[0].memory.communicationBytes, largestGradientStep);
  EXPECT_EQ(inPlace.stages[0].memory.communicationBytes, largestActivationStep);
  EXPECT_EQ(inPlace.stages[0].memory.activationBytes, staged.stages[0].memory.activationBytes);
  EXPECT_EQ(inPlace.time.totalSeconds(), staged.time.totalSeconds());
}

}  // namespace
}  // namespace autopar
