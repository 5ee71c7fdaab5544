// PyTorch's context parallelism runs one attention kernel per ring step and merges each step's
// output into the running output with separate fp32 kernels; its backward accumulates the
// gradients in fp32 (EvaluateOptions::ringMergesInFp32, cost::ringMergeBytes). The traffic grows
// with the ring's length and is priced at the device's HBM bandwidth on the attention op; the
// gathered K/V and the fp32 gradient buffers are the backward's workspace.

#include <gtest/gtest.h>

#include <numeric>

#include "cost/compute.h"
#include "cost/graph_cost.h"
#include "cost/op_cost.h"
#include "frontend/transformer.h"
#include "rules/graph_sharding.h"

namespace autopar {
namespace {

struct Sharded {
  ir::Graph graph;
  rules::GraphSharding sharding;
  cluster::Cluster cluster;
};

/// One LLaMA-style layer (GQA, 8 query and 2 K/V heads) at context parallelism `cp` on `cp`
/// devices of a DGX H100.
Sharded layerAtCp(int64_t cp) {
  frontend::TransformerConfig config;
  config.name = "cp-layer";
  config.layers = 1;
  config.hidden = 512;
  config.heads = 8;
  config.kvHeads = 2;
  config.ffn = 1024;
  config.vocab = 1024;
  config.seq = 1024;
  config.microBatch = 1;
  config.parallel = ir::ParallelConfig{.dp = 1, .cp = cp};
  auto graph = frontend::buildTransformer(config);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  auto cluster = cluster::clusterPreset("dgx-h100");
  EXPECT_TRUE(cluster.ok());
  auto taken = cluster::takeDevices(*cluster, static_cast<int>(cp));
  EXPECT_TRUE(taken.ok());
  std::vector<int> ranks(static_cast<size_t>(cp));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto sharding = rules::shardGraph(*graph, ranks);
  EXPECT_TRUE(sharding.ok()) << sharding.error().message;
  return {std::move(*graph), std::move(*sharding), std::move(*taken)};
}

ir::OpId attentionOf(const ir::Graph& graph) {
  const auto id = graph.findOp("layer0.attn.flash_attention");
  EXPECT_TRUE(id.has_value());
  return id.value_or(0);
}

TEST(RingMerges, BytesFollowTheRingLengthPerLocalOutputElement) {
  for (int64_t cp : {2, 4}) {
    const Sharded layer = layerAtCp(cp);
    if (HasFailure()) return;
    const ir::OpId attention = attentionOf(layer.graph);
    const rules::ShardedOp& shard = layer.sharding.ops[attention];
    // The local output: 1024 / cp tokens x 8 heads x 64.
    const double elements = 1024.0 / static_cast<double>(cp) * 512;
    ASSERT_EQ(static_cast<double>(shard.outputs[0].sliceElements()), elements);
    const cost::RingMergeBytes bytes = cost::ringMergeBytes(layer.graph.op(attention), shard);
    const auto steps = static_cast<double>(cp - 1);
    EXPECT_DOUBLE_EQ(bytes.forward, elements * (20 + 39.5 * steps)) << "cp " << cp;
    EXPECT_DOUBLE_EQ(bytes.backward, elements * (84 + 58.5 * steps)) << "cp " << cp;
    EXPECT_DOUBLE_EQ(bytes.backwardWorkspace, elements * (4 * static_cast<double>(cp) + 42))
        << "cp " << cp;
  }
  // Without context parallelism the attention is one call: nothing to merge.
  const Sharded single = layerAtCp(1);
  const ir::OpId attention = attentionOf(single.graph);
  const cost::RingMergeBytes none =
      cost::ringMergeBytes(single.graph.op(attention), single.sharding.ops[attention]);
  EXPECT_EQ(none.forward, 0.0);
  EXPECT_EQ(none.backward, 0.0);
  EXPECT_EQ(none.backwardWorkspace, 0.0);
}

TEST(RingMerges, PricedOnTheAttentionAtTheHbmBandwidth) {
  const Sharded layer = layerAtCp(4);
  if (HasFailure()) return;
  cost::EvaluateOptions options;
  auto without = cost::evaluateGraph(layer.graph, layer.sharding.ops, layer.cluster, options);
  options.codePath.ringMergesInFp32 = true;
  auto with = cost::evaluateGraph(layer.graph, layer.sharding.ops, layer.cluster, options);
  ASSERT_TRUE(without.ok() && with.ok());
  const ir::OpId attention = attentionOf(layer.graph);
  const cost::RingMergeBytes bytes =
      cost::ringMergeBytes(layer.graph.op(attention), layer.sharding.ops[attention]);
  const cost::DeviceModel device = cost::deviceModel(layer.cluster.device, *options.costModel);
  const cost::OpCost& before = without->ops[attention];
  const cost::OpCost& after = with->ops[attention];
  EXPECT_NEAR(after.forwardSeconds - before.forwardSeconds,
              cost::memorySeconds(device, bytes.forward), 1e-12);
  EXPECT_NEAR(after.backwardSeconds - before.backwardSeconds,
              cost::memorySeconds(device, bytes.backward), 1e-12);
  // Without recompute the ring's buffers are the largest transient of the backward: more than the
  // loss's, which is all there was before.
  EXPECT_EQ(with->stages[0].memory.workspaceBytes, static_cast<int64_t>(bytes.backwardWorkspace));
  EXPECT_LT(without->stages[0].memory.workspaceBytes, with->stages[0].memory.workspaceBytes);
  // Every other op is priced as before.
  for (size_t op = 0; op < layer.graph.ops().size(); ++op) {
    if (static_cast<ir::OpId>(op) == attention) continue;
    EXPECT_EQ(with->ops[op].forwardSeconds, without->ops[op].forwardSeconds) << op;
    EXPECT_EQ(with->ops[op].backwardSeconds, without->ops[op].backwardSeconds) << op;
  }
}

}  // namespace
}  // namespace autopar
