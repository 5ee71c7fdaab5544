#include "frontend/model_presets.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace autopar::frontend {
namespace {

int64_t builtParameterCount(const std::string& name) {
  auto graph = buildPresetGraph(name, 1);
  EXPECT_TRUE(graph) << name << ": " << graph.error().message;
  return graph ? graph->parameterCount() : -1;
}

size_t countKind(const ir::Graph& graph, ir::OpKind kind) {
  return std::count_if(graph.ops().begin(), graph.ops().end(),
                       [&](const ir::Op& op) { return op.kind == kind; });
}

TEST(ModelPresets, NamesAreTheDocumentedList) {
  EXPECT_EQ(modelPresetNames(),
            (std::vector<std::string>{"llama2-7b", "llama2-13b", "llama2-70b", "baichuan2-7b",
                                      "baichuan2-13b", "qwen-7b", "qwen-14b", "pangu-alpha-2.6b",
                                      "pangu-alpha-13b", "gpt3-175b", "qwen2-vl-72b",
                                      "internvl2-8b", "mixtral-8x7b", "ffn"}));
}

TEST(ModelPresets, Llama2MatchesTheOfficialParameterCounts) {
  // Touvron et al. 2023 / the meta-llama HF model cards.
  EXPECT_EQ(builtParameterCount("llama2-7b"), 6'738'415'616);
  EXPECT_EQ(builtParameterCount("llama2-13b"), 13'015'864'320);
  EXPECT_EQ(builtParameterCount("llama2-70b"), 68'976'648'192);
}

TEST(ModelPresets, OtherModelsMatchTheirArchitectures) {
  // Derived from the cited configs; each agrees with the size the model card rounds to.
  // Baichuan2-7B: 2 * 125696*4096 + 32 * (4*4096^2 + 3*4096*11008 + 2*4096) + 4096 (7.5B).
  EXPECT_EQ(builtParameterCount("baichuan2-7b"), 7'505'973'248);
  // Baichuan2-13B: 2 * 125696*5120 + 40 * (4*5120^2 + 3*5120*13696 + 2*5120) + 5120 (13.9B).
  EXPECT_EQ(builtParameterCount("baichuan2-13b"), 13'896'668'160);
  // Qwen-7B: LLaMA-7B shape with vocab 151936 and q/k/v biases 3*4096 per layer (7.7B).
  EXPECT_EQ(builtParameterCount("qwen-7b"), 7'721'324'544);
  // Qwen-14B: 2 * 152064*5120 + 40 * (4*5120^2 + 3*5120 + 3*5120*13696 + 2*5120) + 5120 (14.2B).
  EXPECT_EQ(builtParameterCount("qwen-14b"), 14'167'290'880);
  // GPT-3: 96 * (12h^2 + 13h) + 51200*h + 2048*h + 2h with h = 12288 (the paper's "175B").
  EXPECT_EQ(builtParameterCount("gpt3-175b"), 174'615'846'912);
  // PanGu-alpha: 32 * (12h^2 + 13h) + 40000*h + 1024*h + 2h with h = 2560 ("2.6B").
  EXPECT_EQ(builtParameterCount("pangu-alpha-2.6b"), 2'622'673'920);
  // The same with h = 5120, 40 layers ("13B"; the paper's 13.1B includes the top query layer's
  // extra position table and counts differently).
  EXPECT_EQ(builtParameterCount("pangu-alpha-13b"), 12'795'627'520);
  // Qwen2-VL-72B: the LLM, 80 x (8192 x (8192 + 2 x 1024) + 10240 + 8192^2 + 3 x 8192 x 29568
  // + 2 x 8192) + 2 x 152064 x 8192 + 8192 = 72,706,203,648, plus the vision tower: patch
  // embedding 1176 x 1280, 32 x (4 x 1280^2 + 5120 + 2 x 1280 x 5120 + 6400 + 4 x 1280), merger
  // 2560 + 5120^2 + 5120 + 5120 x 8192 + 8192 = 699,356,672 (the model card's 73.4B).
  EXPECT_EQ(builtParameterCount("qwen2-vl-72b"), 73'405'560'320);
}

TEST(ModelPresets, VisionTowerPrecedesTheText) {
  auto config = transformerPreset("qwen2-vl-72b");
  ASSERT_TRUE(config.ok());
  auto graph = buildTransformer(*config);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  // 1024 patches, 2 x 2 merged: 256 image tokens before 7936 text tokens, 8192 labels.
  EXPECT_EQ(graph->tensor(*graph->findTensor("pixels")).type.shape, (ir::Shape{1, 1024, 1176}));
  EXPECT_EQ(graph->tensor(*graph->findTensor("tokens")).type.shape, (ir::Shape{1, 7936}));
  EXPECT_EQ(graph->tensor(*graph->findTensor("embedding.merge_vision")).type.shape,
            (ir::Shape{1, 8192, 8192}));
  int visionLayers = 0;
  bool bidirectional = false;
  for (const ir::Op& op : graph->ops()) {
    if (op.name == "vit.layer31.attn.flash_attention") bidirectional = !op.attrs.causal;
    if (op.block.starts_with("vit.layer.") && op.name.ends_with(".mlp.residual")) ++visionLayers;
  }
  EXPECT_EQ(visionLayers, 32);
  EXPECT_TRUE(bidirectional);
  // The vision tower is split over tp like the LLM: 16 heads allow tp 8.
  config->parallel = ir::ParallelConfig{.tp = 8, .dp = 1, .sequenceParallel = true};
  EXPECT_TRUE(buildTransformer(*config).ok());
  config->vision.patches = 1002;
  EXPECT_EQ(validateTransformerConfig(*config).error().message,
            "qwen2-vl-72b: vision.patches: 1002 is not divisible by merge^2 = 4");
}

TEST(ModelPresets, GraphCountMatchesTheClosedForm) {
  for (const auto& name : modelPresetNames()) {
    if (name == "ffn") continue;
    auto config = transformerPreset(name);
    ASSERT_TRUE(config) << config.error().message;
    EXPECT_EQ(builtParameterCount(name), transformerParameterCount(*config)) << name;
  }
}

TEST(ModelPresets, ArchitecturalFeatures) {
  auto llama70b = buildPresetGraph("llama2-70b", 1);
  ASSERT_TRUE(llama70b) << llama70b.error().message;
  const auto& kWeight = llama70b->tensor(*llama70b->findTensor("layer79.attn.k_proj.weight"));
  EXPECT_EQ(kWeight.type.shape, (ir::Shape{8192, 1024}));  // 8 kv heads of 128
  EXPECT_EQ(llama70b->tensor(*llama70b->findTensor("tokens")).type.shape, (ir::Shape{1, 4096}));

  auto baichuan13b = buildPresetGraph("baichuan2-13b", 1);
  ASSERT_TRUE(baichuan13b) << baichuan13b.error().message;
  EXPECT_EQ(countKind(*baichuan13b, ir::OpKind::kRotary), 0u);  // ALiBi
  auto baichuan7b = buildPresetGraph("baichuan2-7b", 1);
  ASSERT_TRUE(baichuan7b);
  EXPECT_EQ(countKind(*baichuan7b, ir::OpKind::kRotary), 2u * 32);

  auto qwen = buildPresetGraph("qwen-7b", 2);
  ASSERT_TRUE(qwen);
  EXPECT_TRUE(qwen->findOp("layer0.attn.v_proj.bias_add"));
  EXPECT_FALSE(qwen->findOp("layer0.attn.o_proj.bias_add"));
  EXPECT_EQ(qwen->tensor(*qwen->findTensor("labels")).type.shape, (ir::Shape{2, 8192}));

  auto pangu = transformerPreset("pangu-alpha-2.6b");
  ASSERT_TRUE(pangu);
  EXPECT_EQ(pangu->mlp, TransformerConfig::Mlp::kGeLU);
  EXPECT_EQ(pangu->norm, TransformerConfig::Norm::kLayerNorm);
  EXPECT_EQ(pangu->seq, 1024);
  EXPECT_TRUE(pangu->tiedEmbeddings);
}

TEST(ModelPresets, PresetsAnnotateWithTheirMindFormersParallelConfigs) {
  // Seed 000's LLaMA2-70B benchmark ran dp=2, mp=4 (pp=8).
  auto config = transformerPreset("llama2-70b");
  ASSERT_TRUE(config);
  config->microBatch = 2;
  config->parallel = ir::ParallelConfig{.tp = 4, .dp = 2};
  auto graph = buildTransformer(*config);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->op(*graph->findOp("layer0.attn.q_proj")).shard,
            (ir::StrategyCuts{{2, 1, 1}, {1, 4}}));
  config->parallel = ir::ParallelConfig{.tp = 16};
  auto tooWide = buildTransformer(*config);
  ASSERT_FALSE(tooWide);
  EXPECT_EQ(tooWide.error().message,
            "llama2-70b: kvHeads: 8 is not divisible by tensorParallel 16");
}

TEST(ModelPresets, Errors) {
  auto ffn = transformerPreset("ffn");
  ASSERT_FALSE(ffn);
  EXPECT_EQ(ffn.error().message,
            "model preset 'ffn' is a feed-forward network, not a transformer; build it with "
            "buildFfn");
  auto unknown = transformerPreset("llama3-8b");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message,
            "unknown model preset 'llama3-8b' (known: llama2-7b, llama2-13b, llama2-70b, "
            "baichuan2-7b, baichuan2-13b, qwen-7b, qwen-14b, pangu-alpha-2.6b, pangu-alpha-13b, "
            "gpt3-175b, qwen2-vl-72b, internvl2-8b, mixtral-8x7b, ffn)");
  auto badBatch = buildPresetGraph("llama2-7b", 0);
  ASSERT_FALSE(badBatch);
  EXPECT_EQ(badBatch.error().message, "llama2-7b: microBatch: expected a positive size, got 0");
}

TEST(SeedModels, FfnIsSeed002sNetwork) {
  auto graph = buildPresetGraph("ffn", 32);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->name(), "ffn");
  std::vector<std::string> names;
  for (const auto& op : graph->ops()) names.push_back(op.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "dense1.matmul", "dense1.bias_add", "relu1", "dense2.matmul", "dense2.bias_add",
                "relu2", "dense3.matmul", "dense3.bias_add", "relu3", "dense4.matmul",
                "dense4.bias_add", "relu4", "dense5.matmul", "dense5.bias_add"}));
  // 784*512+512 + 512*256+256 + 256*128+128 + 128*64+64 + 64*10+10.
  EXPECT_EQ(graph->parameterCount(), 575'050);
  EXPECT_EQ(graph->tensor(*graph->findTensor("x")).type,
            (ir::TensorType{{32, 784}, ir::DType::kF32}));
  EXPECT_EQ(graph->tensor(graph->ops().back().outputs[0]).type.shape, (ir::Shape{32, 10}));
  for (const auto& op : graph->ops()) EXPECT_TRUE(op.shard.empty()) << op.name;
}

TEST(SeedModels, AnnotatedFfnCarriesTheSeedsTwoShards) {
  auto graph = buildAnnotatedFfn(32);
  ASSERT_TRUE(graph) << graph.error().message;
  size_t annotated = 0;
  for (const auto& op : graph->ops()) annotated += op.shard.empty() ? 0 : 1;
  EXPECT_EQ(annotated, 2u);
  EXPECT_EQ(graph->op(*graph->findOp("dense1.matmul")).shard, (ir::StrategyCuts{{2, 4}, {4, 1}}));
  EXPECT_EQ(graph->op(*graph->findOp("dense3.matmul")).shard, (ir::StrategyCuts{{1, 8}, {8, 1}}));
}

TEST(SeedModels, SeedMlpIsTheRecursiveExample) {
  auto graph = buildSeedMlp(32);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->ops().size(), 8u);
  EXPECT_TRUE(graph->findOp("layer2.bias_add"));
  EXPECT_TRUE(graph->findOp("relu2"));
  EXPECT_FALSE(graph->findOp("relu3"));
  EXPECT_EQ(graph->parameterCount(), 784 * 512 + 512 + 512 * 512 + 512 + 512 + 1);
  EXPECT_EQ(graph->tensor(graph->ops().back().outputs[0]).type.shape, (ir::Shape{32, 1}));
}

TEST(SeedModels, BatchMustBePositive) {
  auto ffn = buildFfn(0);
  ASSERT_FALSE(ffn);
  EXPECT_EQ(ffn.error().message, "ffn: batch: expected a positive size, got 0");
  auto mlp = buildSeedMlp(-1);
  ASSERT_FALSE(mlp);
  EXPECT_EQ(mlp.error().message, "mlp: batch: expected a positive size, got -1");
}

}  // namespace
}  // namespace autopar::frontend
