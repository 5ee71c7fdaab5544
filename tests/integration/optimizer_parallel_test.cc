// Seed 004's optimizer parallel on LLaMA2-7B with DP 8 (every parameter replicated 8 times): the
// optimizer states per device must be 1/8 of the unsharded figure for every parameter above
// parallel_optimizer_threshold, and whole for the rest. The expected value is computed here from
// the parameter shapes and the state formula (fp32 master copy + two fp32 moments = 12 bytes per
// bf16 parameter), not read from the planner.

#include <gtest/gtest.h>

#include <numeric>

#include "cluster/cluster.h"
#include "cost/graph_cost.h"
#include "frontend/model_presets.h"
#include "frontend/transformer.h"
#include "rules/graph_sharding.h"

namespace autopar {
namespace {

constexpr int64_t kDevices = 8;
constexpr int64_t kOptimizerBytesPerParameter = 12;  // fp32 master + two fp32 moments

struct Llama {
  ir::Graph graph;
  rules::GraphSharding sharding;
  cluster::Cluster cluster;
};

Llama dataParallelLlama(int64_t devices = kDevices) {
  auto config = frontend::transformerPreset("llama2-7b");
  EXPECT_TRUE(config.ok());
  config->parallel = ir::ParallelConfig{.dp = devices};
  config->microBatch = devices;
  auto graph = frontend::buildTransformer(*config);
  EXPECT_TRUE(graph.ok());
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  EXPECT_TRUE(cluster.ok());
  std::vector<int> ranks(static_cast<size_t>(devices));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto sharding = rules::shardGraph(*graph, ranks);
  EXPECT_TRUE(sharding.ok());
  return Llama{std::move(*graph), std::move(*sharding), std::move(*cluster)};
}

cost::CostReport evaluate(const Llama& model, const cost::EvaluateOptions& options) {
  auto report = cost::evaluateGraph(model.graph, model.sharding.ops, model.cluster, options);
  EXPECT_TRUE(report.ok()) << report.error().message;
  return std::move(*report);
}

TEST(OptimizerParallel, SevenBillionWithDataParallelEightHoldsAnEighthOfTheOptimizerStates) {
  const Llama model = dataParallelLlama();
  cost::EvaluateOptions options;
  const cost::CostReport plain = evaluate(model, options);
  options.optimizerParallel.enabled = true;
  const cost::CostReport sharded = evaluate(model, options);

  int64_t unsharded = 0;
  int64_t expected = 0;
  for (ir::TensorId id : model.graph.parameters()) {
    const ir::Tensor& tensor = model.graph.tensor(id);
    const int64_t elements = ir::numElements(tensor.type.shape);
    const int64_t states = elements * kOptimizerBytesPerParameter;
    unsharded += states;
    const bool aboveThreshold = tensor.type.bytes() > 64 * 1024;
    expected +=
        aboveThreshold && tensor.type.shape.front() % kDevices == 0 ? states / kDevices : states;
  }
  EXPECT_EQ(plain.memory.optimizerBytes, unsharded);
  EXPECT_NEAR(static_cast<double>(sharded.memory.optimizerBytes), static_cast<double>(expected),
              0.01 * static_cast<double>(expected));
  // The norm weights (8 KiB each) stay whole, so the share is a little above 1/8.
  const double share = static_cast<double>(sharded.memory.optimizerBytes) / unsharded;
  EXPECT_GT(share, 1.0 / kDevices);
  EXPECT_LT(share, 1.0 / kDevices * 1.01);
  // Parameters are stored as slices; gradients stay whole unless accumulation is sharded too.
  EXPECT_NEAR(static_cast<double>(sharded.memory.parameterBytes),
              static_cast<double>(plain.memory.parameterBytes) / kDevices,
              0.01 * static_cast<double>(plain.memory.parameterBytes) / kDevices);
  EXPECT_EQ(sharded.memory.gradientBytes, plain.memory.gradientBytes);
  options.optimizerParallel.gradientAccumulationShard = true;
  const int64_t accumulationSharded = evaluate(model, options).memory.gradientBytes;
  EXPECT_LT(accumulationSharded, plain.memory.gradientBytes / 7);
  // With one micro-batch nothing accumulates: each gradient is reduce-scattered as it is made,
  // so the switch changes nothing and a sharded parameter's gradient is its slice.
  options.optimizerParallel.gradientAccumulationShard = false;
  options.optimizerParallel.accumulates = false;
  EXPECT_EQ(evaluate(model, options).memory.gradientBytes, accumulationSharded);
  options.optimizerParallel.enabled = false;
  EXPECT_EQ(evaluate(model, options).memory.gradientBytes, plain.memory.gradientBytes);
}

TEST(OptimizerParallel, GradientAllReducesBecomeReduceScattersAndForwardAllGathers) {
  const Llama model = dataParallelLlama();
  cost::EvaluateOptions options;
  options.optimizerParallel.enabled = true;
  const cost::CostReport report = evaluate(model, options);
  int reduceScatters = 0;
  int allGathers = 0;
  for (const auto& edge : report.redistributions) {
    for (const auto& step : edge.redistribution.steps) {
      const auto name = layout::primitiveName(step.kind);
      if (edge.isGradientSync && name == "reduce_scatter") ++reduceScatters;
      if (edge.direction == cost::EdgeDirection::kForward && name == "all_gather") ++allGathers;
    }
  }
  int shardedParameters = 0;
  for (const auto& placement : report.parameters) shardedParameters += placement.shardDim >= 0;
  EXPECT_EQ(reduceScatters, shardedParameters);
  EXPECT_EQ(allGathers, shardedParameters);
  // 32 layers x 7 matrices + embedding + head.
  EXPECT_EQ(shardedParameters, 32 * 7 + 2);
}

TEST(OptimizerParallel, ThresholdAndPerParameterFlagDecideWhatIsSharded) {
  Llama model = dataParallelLlama();
  cost::EvaluateOptions options;
  options.optimizerParallel.enabled = true;
  const ir::TensorId norm = *model.graph.findTensor("layer0.attn_norm.weight");
  const ir::TensorId query = *model.graph.findTensor("layer0.attn.q_proj.weight");
  auto shardsOf = [&](const cost::CostReport& report, ir::TensorId id) {
    for (const auto& placement : report.parameters) {
      if (placement.tensor == id) return placement.optimizerShards;
    }
    return int64_t{0};
  };
  cost::CostReport report = evaluate(model, options);
  EXPECT_EQ(shardsOf(report, norm), 1);  // 8 KiB <= 64 KB
  EXPECT_EQ(shardsOf(report, query), kDevices);
  // 4096 x 4096 bf16 is 32768 KB: a threshold of 32768 KB keeps it whole.
  options.optimizerParallel.thresholdKb = 32768;
  EXPECT_EQ(shardsOf(evaluate(model, options), query), 1);
  options.optimizerParallel.thresholdKb = 64;
  model.graph.mutableTensor(norm).parallelOptimizer = true;
  model.graph.mutableTensor(query).parallelOptimizer = false;
  report = evaluate(model, options);
  EXPECT_EQ(shardsOf(report, norm), kDevices);
  EXPECT_EQ(shardsOf(report, query), 1);
}

TEST(OptimizerParallel, GroupUpdateSplitsTheStatesAndBroadcastsTheParameters) {
  const Llama model = dataParallelLlama();
  cost::EvaluateOptions options;
  const cost::CostReport plain = evaluate(model, options);
  options.optimizerParallel.enabled = true;
  options.optimizerParallel.groupUpdate = true;
  const cost::CostReport grouped = evaluate(model, options);
  EXPECT_EQ(grouped.memory.parameterBytes, plain.memory.parameterBytes);
  EXPECT_LT(grouped.memory.optimizerBytes, plain.memory.optimizerBytes / 7);
  // Each device updates an eighth of the parameters, then broadcasts them: the optimizer step
  // takes less memory traffic but pays the broadcasts.
  EXPECT_GT(grouped.time.optimizerSeconds, 0.0);
  EXPECT_LT(grouped.time.optimizerSeconds, plain.time.optimizerSeconds / 7);
  EXPECT_GT(grouped.stages[0].parameterGatherSeconds, 0.0);
}

double gradientSyncSeconds(const cost::CostReport& report) {
  double seconds = 0;
  for (const auto& edge : report.redistributions) {
    if (edge.isGradientSync) seconds += edge.redistribution.seconds;
  }
  return seconds;
}

TEST(OptimizerParallel, DistributedOptimizerReduceScattersGradientsAndAllGathersTheUpdate) {
  const Llama model = dataParallelLlama();
  cost::EvaluateOptions options;
  options.optimizerParallel.enabled = true;
  options.optimizerParallel.groupUpdate = true;
  options.optimizerParallel.thresholdKb = 0;  // Megatron's distributed optimizer shards them all
  const cost::CostReport broadcast = evaluate(model, options);
  options.optimizerParallel.distributedOptimizer = true;
  const cost::CostReport distributed = evaluate(model, options);
  // Same model states: whole parameters and gradients, an eighth of the optimizer states.
  EXPECT_EQ(distributed.memory.parameterBytes, broadcast.memory.parameterBytes);
  EXPECT_EQ(distributed.memory.gradientBytes, broadcast.memory.gradientBytes);
  EXPECT_EQ(distributed.memory.optimizerBytes, broadcast.memory.optimizerBytes);
  int reduceScatters = 0;
  for (const auto& edge : distributed.redistributions) {
    for (const auto& step : edge.redistribution.steps) {
      EXPECT_NE(step.kind, layout::PrimitiveKind::kAllReduce) << edge.tensor;
      reduceScatters += edge.isGradientSync && step.kind == layout::PrimitiveKind::kReduceScatter;
    }
  }
  EXPECT_EQ(reduceScatters, static_cast<int>(distributed.parameters.size()));
  // A reduce-scatter moves half an all-reduce's bytes.
  EXPECT_LT(gradientSyncSeconds(distributed), 0.6 * gradientSyncSeconds(broadcast));
  // The updated slices come back by one all-gather of the whole buffer.
  EXPECT_GT(distributed.stages[0].parameterGatherSeconds, 0.0);
  EXPECT_LT(distributed.stages[0].parameterGatherSeconds,
            broadcast.stages[0].parameterGatherSeconds);
}

TEST(OptimizerParallel, PaddingShardsParametersNoDimOfWhichDivides) {
  // 4096 and 11008 do not divide by 6: MindSpore's rule keeps LLaMA's matrices whole; Megatron's
  // distributed optimizer and ZeRO pad them to six equal slices.
  const Llama model = dataParallelLlama(6);
  cost::EvaluateOptions options;
  options.optimizerParallel.enabled = true;
  const cost::CostReport whole = evaluate(model, options);
  options.optimizerParallel.padToShard = true;
  const cost::CostReport padded = evaluate(model, options);
  for (const auto& placement : whole.parameters) EXPECT_EQ(placement.optimizerShards, 1);
  int sharded = 0;
  for (const auto& placement : padded.parameters) sharded += placement.optimizerShards == 6;
  EXPECT_EQ(sharded, 32 * 7 + 2);
  const double share = static_cast<double>(padded.memory.optimizerBytes) /
                       static_cast<double>(whole.memory.optimizerBytes);
  EXPECT_GT(share, 1.0 / 6);
  EXPECT_LT(share, 1.0 / 6 * 1.01);
}

TEST(OptimizerParallel, RegatherFreesGatheredParametersAndGathersThemAgainForBackward) {
  const Llama model = dataParallelLlama();
  cost::EvaluateOptions options;
  options.optimizerParallel.enabled = true;
  const cost::CostReport kept = evaluate(model, options);
  options.recompute.parallelOptimizerRegather = true;
  const cost::CostReport regathered = evaluate(model, options);
  // The kept copies are communication buffers; regathering frees them and pays one more gather
  // of every sharded parameter in backward.
  EXPECT_LT(regathered.memory.communicationBytes, kept.memory.communicationBytes / 10);
  EXPECT_GT(regathered.stages[0].recomputeSeconds, kept.stages[0].recomputeSeconds);
  double forwardGathers = 0;
  for (const auto& edge : kept.redistributions) {
    const bool gather = edge.direction == cost::EdgeDirection::kForward &&
                        model.graph.tensor(edge.tensor).isParameter();
    if (gather) forwardGathers += edge.redistribution.seconds;
  }
  // Every parameter a backward reads is gathered again (the embedding table's backward does not
  // read the table).
  const double again = regathered.stages[0].recomputeSeconds - kept.stages[0].recomputeSeconds;
  EXPECT_GT(again, 0.9 * forwardGathers);
  EXPECT_LE(again, forwardGathers * (1 + 1e-9));
}

TEST(CommunicationFusion, AutomaticBucketsHideGradientSynchronisationBehindTheBackward) {
  const Llama model = dataParallelLlama();
  cost::EvaluateOptions options;
  const cost::CostReport unfused = evaluate(model, options);
  options.fusion.bucketing = cost::Bucketing::kBySize;
  const cost::CostReport bySize = evaluate(model, options);
  options.fusion.bucketing = cost::Bucketing::kByLayer;
  const cost::CostReport byLayer = evaluate(model, options);
  const double exposedUnfused = unfused.stages[0].exposedGradientSyncSeconds;
  EXPECT_EQ(exposedUnfused, unfused.stages[0].gradientSyncSeconds);
  EXPECT_LT(bySize.stages[0].exposedGradientSyncSeconds, 0.5 * exposedUnfused);
  EXPECT_LT(byLayer.stages[0].exposedGradientSyncSeconds, 0.5 * exposedUnfused);
  EXPECT_TRUE(unfused.fusionGroups.empty());
  EXPECT_GT(bySize.fusionGroups.size(), 1u);
  EXPECT_EQ(byLayer.fusionGroups.size(), 34u);  // 32 layers, embedding, head
  // Fusing saves latency: the fused collectives cost less than the members one by one.
  for (const auto& group : bySize.fusionGroups) {
    for (const auto& collective : group.collectives) {
      EXPECT_LE(collective.seconds, collective.unfusedSeconds * (1 + 1e-9)) << group.name;
    }
  }
}

}  // namespace
}  // namespace autopar
