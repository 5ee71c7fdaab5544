#include "frontend/transformer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "frontend/model_presets.h"

namespace autopar::frontend {
namespace {

using Config = TransformerConfig;

/// LLaMA-style: h 64, 4 query heads of 16, 2 kv heads (GQA), SwiGLU 96, vocab 128.
Config tinyLlama() {
  Config config;
  config.name = "tiny-llama";
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.kvHeads = 2;
  config.ffn = 96;
  config.vocab = 128;
  config.seq = 8;
  config.microBatch = 4;
  return config;
}

/// GPT-style: LayerNorm, GeLU 256, learned positions, biases everywhere, tied head.
Config tinyGpt() {
  Config config = tinyLlama();
  config.name = "tiny-gpt";
  config.kvHeads = 4;
  config.ffn = 256;
  config.mlp = Config::Mlp::kGeLU;
  config.norm = Config::Norm::kLayerNorm;
  config.position = Config::Position::kLearned;
  config.linearBias = true;
  config.tiedEmbeddings = true;
  return config;
}

const ir::Op& opNamed(const ir::Graph& graph, const std::string& name) {
  auto id = graph.findOp(name);
  EXPECT_TRUE(id) << "no op " << name;
  return graph.op(id.value_or(0));
}

ir::Shape outputShape(const ir::Graph& graph, const std::string& opName) {
  return graph.tensor(opNamed(graph, opName).outputs.front()).type.shape;
}

ir::Shape tensorShape(const ir::Graph& graph, const std::string& name) {
  auto id = graph.findTensor(name);
  EXPECT_TRUE(id) << "no tensor " << name;
  return graph.tensor(id.value_or(0)).type.shape;
}

size_t countKind(const ir::Graph& graph, ir::OpKind kind) {
  return std::count_if(graph.ops().begin(), graph.ops().end(),
                       [&](const ir::Op& op) { return op.kind == kind; });
}

/// The op consuming `opName`'s output tensor, by name (the first one).
std::string consumerOf(const ir::Graph& graph, const std::string& opName) {
  const ir::Tensor& output = graph.tensor(opNamed(graph, opName).outputs.front());
  return output.consumers.empty() ? "<none>" : graph.op(output.consumers.front()).name;
}

std::string errorOf(const Config& config) {
  auto graph = buildTransformer(config);
  return graph ? "<ok>" : graph.error().message;
}

TEST(Transformer, LlamaStyleLayerHasSixteenOpsInOrder) {
  auto graph = buildTransformer(tinyLlama());
  ASSERT_TRUE(graph) << graph.error().message;
  // embedding + 16 per layer + final_norm, lm_head, loss.
  ASSERT_EQ(graph->ops().size(), 1u + 16 * 2 + 3);
  const std::vector<std::string> layerOps = {"layer1.attn_norm",
                                             "layer1.attn.q_proj",
                                             "layer1.attn.k_proj",
                                             "layer1.attn.v_proj",
                                             "layer1.attn.q_rotary",
                                             "layer1.attn.k_rotary",
                                             "layer1.attn.flash_attention",
                                             "layer1.attn.o_proj",
                                             "layer1.attn.residual",
                                             "layer1.mlp_norm",
                                             "layer1.mlp.gate_proj",
                                             "layer1.mlp.up_proj",
                                             "layer1.mlp.act",
                                             "layer1.mlp.mul",
                                             "layer1.mlp.down_proj",
                                             "layer1.mlp.residual"};
  const size_t first = *graph->findOp("layer1.attn_norm");
  for (size_t i = 0; i < layerOps.size(); ++i) {
    EXPECT_EQ(graph->ops()[first + i].name, layerOps[i]);
    EXPECT_EQ(graph->ops()[first + i].block, "llm.layer.1");
  }
  EXPECT_EQ(graph->ops().front().name, "embedding");
  EXPECT_EQ(graph->ops().front().block, "embedding");
  EXPECT_EQ(opNamed(*graph, "lm_head").block, "head");
  EXPECT_EQ(graph->ops().back().name, "loss");
  EXPECT_EQ(countKind(*graph, ir::OpKind::kRMSNorm), 2u * 2 + 1);
  EXPECT_EQ(countKind(*graph, ir::OpKind::kSiLU), 2u);
}

TEST(Transformer, LlamaStyleShapesFollowGqa) {
  auto graph = buildTransformer(tinyLlama());
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(tensorShape(*graph, "tokens"), (ir::Shape{4, 8}));
  EXPECT_EQ(graph->tensor(*graph->findTensor("tokens")).type.dtype, ir::DType::kI32);
  EXPECT_EQ(outputShape(*graph, "embedding"), (ir::Shape{4, 8, 64}));
  EXPECT_EQ(tensorShape(*graph, "layer0.attn.q_proj.weight"), (ir::Shape{64, 64}));
  EXPECT_EQ(tensorShape(*graph, "layer0.attn.k_proj.weight"), (ir::Shape{64, 32}));
  EXPECT_EQ(outputShape(*graph, "layer0.attn.k_rotary"), (ir::Shape{4, 8, 32}));
  EXPECT_EQ(outputShape(*graph, "layer0.attn.flash_attention"), (ir::Shape{4, 8, 64}));
  EXPECT_EQ(outputShape(*graph, "layer0.mlp.mul"), (ir::Shape{4, 8, 96}));
  EXPECT_EQ(tensorShape(*graph, "layer0.mlp.down_proj.weight"), (ir::Shape{96, 64}));
  EXPECT_EQ(outputShape(*graph, "lm_head"), (ir::Shape{4, 8, 128}));
  EXPECT_EQ(outputShape(*graph, "loss"), (ir::Shape{}));
  const ir::Op& attention = opNamed(*graph, "layer0.attn.flash_attention");
  EXPECT_EQ(attention.attrs.numHeads, 4);
  EXPECT_EQ(attention.attrs.numKvHeads, 2);
  EXPECT_TRUE(attention.attrs.causal);
  EXPECT_EQ(opNamed(*graph, "layer0.attn.k_rotary").attrs.numHeads, 2);
  EXPECT_EQ(graph->tensor(*graph->findTensor("layer0.attn_norm.weight")).type.dtype,
            ir::DType::kBF16);
}

TEST(Transformer, LlamaStyleParameterCount) {
  const Config config = tinyLlama();
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  // embedding 128*64 = 8192; per layer q 64*64 + k 64*32 + v 64*32 + o 64*64 = 12288,
  // SwiGLU 3*64*96 = 18432, two norms 128 -> 30848, twice; final norm 64; head 64*128 = 8192.
  EXPECT_EQ(graph->parameterCount(), 8192 + 2 * 30848 + 64 + 8192);
  EXPECT_EQ(transformerParameterCount(config), graph->parameterCount());
  for (const auto& op : graph->ops()) EXPECT_TRUE(op.shard.empty()) << op.name;
}

TEST(Transformer, GptStyleUsesLearnedPositionsBiasesLayerNormAndTiedHead) {
  const Config config = tinyGpt();
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  // embedding, position_add, 18 per layer, final_norm, lm_head, loss.
  EXPECT_EQ(graph->ops().size(), 2u + 18 * 2 + 3);
  EXPECT_EQ(countKind(*graph, ir::OpKind::kRotary), 0u);
  EXPECT_EQ(countKind(*graph, ir::OpKind::kGeLU), 2u);
  EXPECT_EQ(opNamed(*graph, "embedding.position_add").block, "embedding");
  EXPECT_EQ(tensorShape(*graph, "position_embedding.weight"), (ir::Shape{8, 64}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn_norm").inputs.size(), 3u);
  EXPECT_TRUE(graph->findOp("layer0.attn.o_proj.bias_add"));
  EXPECT_TRUE(graph->findOp("layer1.mlp.fc2.bias_add"));
  const ir::Op& head = opNamed(*graph, "lm_head");
  EXPECT_TRUE(head.attrs.transposeB);
  EXPECT_EQ(graph->tensor(head.inputs[1]).name, "embedding.weight");
  EXPECT_FALSE(graph->findTensor("lm_head.weight"));
  // embedding 8192 + positions 8*64 = 512; per layer attention 4*4096 + biases 4*64,
  // MLP 2*64*256 + biases 256 + 64, two LayerNorms 2*128 -> 49984, twice; final LayerNorm 128.
  EXPECT_EQ(graph->parameterCount(), 8192 + 512 + 2 * 49984 + 128);
  EXPECT_EQ(transformerParameterCount(config), graph->parameterCount());
}

TEST(Transformer, QkvBiasAddsBiasesToQueryKeyValueOnly) {
  Config config = tinyLlama();
  config.qkvBias = true;
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(countKind(*graph, ir::OpKind::kAdd), 2u * (3 + 2));
  EXPECT_EQ(tensorShape(*graph, "layer0.attn.k_proj.bias"), (ir::Shape{32}));
  EXPECT_FALSE(graph->findOp("layer0.attn.o_proj.bias_add"));
  EXPECT_EQ(graph->parameterCount(), 8192 + 2 * (30848 + 64 + 32 + 32) + 64 + 8192);
  EXPECT_EQ(transformerParameterCount(config), graph->parameterCount());
}

TEST(Transformer, AlibiHasNoRotaryAndNoPositionParameters) {
  Config config = tinyLlama();
  config.position = Config::Position::kAlibi;
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(countKind(*graph, ir::OpKind::kRotary), 0u);
  EXPECT_EQ(graph->ops().size(), 1u + 14 * 2 + 3);
  EXPECT_EQ(graph->parameterCount(), 8192 + 2 * 30848 + 64 + 8192);
}

TEST(Transformer, MegatronAnnotations) {
  Config config = tinyLlama();
  config.qkvBias = true;
  config.parallel = ir::ParallelConfig{.tp = 2, .dp = 2};
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  using Cuts = ir::StrategyCuts;
  EXPECT_EQ(opNamed(*graph, "embedding").shard, (Cuts{{2, 1}, {2, 1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn_norm").shard, (Cuts{{2, 1, 1}, {1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn.q_proj").shard, (Cuts{{2, 1, 1}, {1, 2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn.q_proj.bias_add").shard, (Cuts{{2, 1, 2}, {2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn.k_rotary").shard, (Cuts{{2, 1, 2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn.flash_attention").shard,
            (Cuts{{2, 1, 2}, {2, 1, 2}, {2, 1, 2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn.o_proj").shard, (Cuts{{2, 1, 2}, {2, 1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn.residual").shard, (Cuts{{2, 1, 1}, {2, 1, 1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.up_proj").shard, (Cuts{{2, 1, 1}, {1, 2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.act").shard, (Cuts{{2, 1, 2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.mul").shard, (Cuts{{2, 1, 2}, {2, 1, 2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.down_proj").shard, (Cuts{{2, 1, 2}, {2, 1}}));
  EXPECT_EQ(opNamed(*graph, "lm_head").shard, (Cuts{{2, 1, 1}, {1, 2}}));
  EXPECT_EQ(opNamed(*graph, "loss").shard, (Cuts{{2, 1, 2}, {2, 1}}));
}

TEST(Transformer, VocabularySplitsOfTheHeadTheLossAndTheEmbedding) {
  using Cuts = ir::StrategyCuts;
  Config config = tinyLlama();
  config.parallel = ir::ParallelConfig{.tp = 2, .dp = 2};
  // MindFormers' Qwen and Baichuan2 heads: the vocabulary over all 4 devices, the batch whole.
  config.headVocab = Config::VocabSplit::kAllDevices;
  config.lossVocab = Config::VocabSplit::kAllDevices;
  config.embeddingTableWhole = true;
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(opNamed(*graph, "lm_head").shard, (Cuts{{1, 1, 1}, {1, 4}}));
  EXPECT_EQ(opNamed(*graph, "loss").shard, (Cuts{{1, 1, 4}, {1, 1}}));
  EXPECT_EQ(opNamed(*graph, "embedding").shard, (Cuts{{1, 1}, {2, 1}}));
  // vocab_emb_dp on LLaMA: the head keeps its batch cut and the whole vocabulary.
  config.headVocab = Config::VocabSplit::kWhole;
  config.lossVocab = Config::VocabSplit::kByTp;
  graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(opNamed(*graph, "lm_head").shard, (Cuts{{2, 1, 1}, {1, 1}}));
  EXPECT_EQ(opNamed(*graph, "loss").shard, (Cuts{{2, 1, 2}, {2, 1}}));
  // A tied head reads the table transposed: its vocabulary rows split.
  Config tied = tinyGpt();
  tied.parallel = ir::ParallelConfig{.tp = 2, .dp = 2};
  tied.headVocab = Config::VocabSplit::kAllDevices;
  graph = buildTransformer(tied);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(opNamed(*graph, "lm_head").shard, (Cuts{{1, 1, 1}, {4, 1}}));
}

TEST(Transformer, MindFormersKeyOperatorsAloneKeepTheAnnotation) {
  Config config = tinyLlama();
  config.qkvBias = true;
  config.parallel = ir::ParallelConfig{.tp = 2, .dp = 2};
  config.annotated = Config::Annotated::kMindFormersKeyOps;
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  using Cuts = ir::StrategyCuts;
  for (const char* kept :
       {"layer0.attn.q_proj", "layer0.attn.q_proj.bias_add", "layer1.attn.v_proj",
        "layer0.attn.flash_attention", "layer0.attn.o_proj", "loss"}) {
    EXPECT_FALSE(opNamed(*graph, kept).shard.empty()) << kept;
  }
  EXPECT_EQ(opNamed(*graph, "layer0.attn.o_proj").shard, (Cuts{{2, 1, 2}, {2, 1}}));
  for (const char* left :
       {"embedding", "layer0.attn_norm", "layer0.attn.q_rotary", "layer0.attn.residual",
        "layer0.mlp.up_proj", "layer0.mlp.down_proj", "final_norm", "lm_head"}) {
    EXPECT_TRUE(opNamed(*graph, left).shard.empty()) << left;
  }
}

TEST(Transformer, EveryAnnotationHasOneCutPerInputDimension) {
  for (Config config : {tinyLlama(), tinyGpt()}) {
    config.parallel = ir::ParallelConfig{.tp = 2, .dp = 4};
    auto graph = buildTransformer(config);
    ASSERT_TRUE(graph) << graph.error().message;
    for (const auto& op : graph->ops()) {
      ASSERT_EQ(op.shard.size(), op.inputs.size()) << op.name;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        EXPECT_EQ(op.shard[i].size(), graph->tensor(op.inputs[i]).type.shape.size()) << op.name;
      }
    }
  }
}

TEST(Transformer, GptStyleAnnotationsForBiasesPositionsAndTiedHead) {
  Config config = tinyGpt();
  config.parallel = ir::ParallelConfig{.tp = 4};  // dp 1
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  using Cuts = ir::StrategyCuts;
  EXPECT_EQ(opNamed(*graph, "embedding").shard, (Cuts{{4, 1}, {1, 1}}));
  EXPECT_EQ(opNamed(*graph, "embedding.position_add").shard, (Cuts{{1, 1, 1}, {1, 1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn_norm").shard, (Cuts{{1, 1, 1}, {1}, {1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.fc1.bias_add").shard, (Cuts{{1, 1, 4}, {4}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.fc2.bias_add").shard, (Cuts{{1, 1, 1}, {1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.act").shard, (Cuts{{1, 1, 4}}));
  EXPECT_EQ(opNamed(*graph, "lm_head").shard, (Cuts{{1, 1, 1}, {4, 1}}));
}

TEST(Transformer, HiddenDropoutSitsBetweenTheOutputProjectionsAndTheResiduals) {
  Config config = tinyGpt();
  config.hiddenDropout = 0.1;
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  // embedding, position_add, 18 + 2 dropouts per layer, final_norm, lm_head, loss.
  EXPECT_EQ(graph->ops().size(), 2u + 20 * 2 + 3);
  EXPECT_EQ(countKind(*graph, ir::OpKind::kDropout), 2u * 2);
  EXPECT_EQ(consumerOf(*graph, "layer1.attn.o_proj.bias_add"), "layer1.attn.dropout");
  EXPECT_EQ(consumerOf(*graph, "layer1.attn.dropout"), "layer1.attn.residual");
  EXPECT_EQ(consumerOf(*graph, "layer1.mlp.fc2.bias_add"), "layer1.mlp.dropout");
  EXPECT_EQ(consumerOf(*graph, "layer1.mlp.dropout"), "layer1.mlp.residual");
  const ir::Op& dropout = opNamed(*graph, "layer1.mlp.dropout");
  EXPECT_EQ(dropout.attrs.dropoutRate, 0.1);
  EXPECT_EQ(dropout.block, "llm.layer.1");
  EXPECT_EQ(outputShape(*graph, "layer1.mlp.dropout"), (ir::Shape{4, 8, 64}));
  EXPECT_EQ(transformerParameterCount(config), graph->parameterCount());

  // Without biases the dropout follows the row-parallel matmul itself.
  Config llama = tinyLlama();
  llama.hiddenDropout = 0.2;
  auto llamaGraph = buildTransformer(llama);
  ASSERT_TRUE(llamaGraph) << llamaGraph.error().message;
  EXPECT_EQ(consumerOf(*llamaGraph, "layer0.attn.o_proj"), "layer0.attn.dropout");
  EXPECT_EQ(consumerOf(*llamaGraph, "layer0.mlp.down_proj"), "layer0.mlp.dropout");
  EXPECT_EQ(opNamed(*llamaGraph, "layer0.attn.dropout").attrs.dropoutRate, 0.2);
}

TEST(Transformer, HiddenDropoutIsAnnotatedLikeTheResiduals) {
  Config config = tinyGpt();
  config.hiddenDropout = 0.1;
  config.parallel = ir::ParallelConfig{.tp = 4, .dp = 2};
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(opNamed(*graph, "layer0.attn.dropout").shard, (ir::StrategyCuts{{2, 1, 1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.dropout").shard, (ir::StrategyCuts{{2, 1, 1}}));
}

TEST(Transformer, GptPresetsTrainWithHiddenDropoutLlamaStylePresetsWithout) {
  auto pangu = buildPresetGraph("pangu-alpha-2.6b", 1);
  ASSERT_TRUE(pangu) << pangu.error().message;
  EXPECT_EQ(countKind(*pangu, ir::OpKind::kDropout), 2u * 32);
  for (int layer = 0; layer < 32; ++layer) {
    for (const char* part : {"attn", "mlp"}) {
      const std::string name = "layer" + std::to_string(layer) + "." + part + ".dropout";
      EXPECT_EQ(opNamed(*pangu, name).attrs.dropoutRate, 0.1) << name;
    }
  }
  for (const char* name : {"gpt3-175b", "pangu-alpha-13b"}) {
    auto config = transformerPreset(name);
    ASSERT_TRUE(config) << config.error().message;
    EXPECT_EQ(config->hiddenDropout, 0.1) << name;
  }
  auto llama = buildPresetGraph("llama2-7b", 1);
  ASSERT_TRUE(llama) << llama.error().message;
  EXPECT_EQ(countKind(*llama, ir::OpKind::kDropout), 0u);
  for (const char* name :
       {"llama2-13b", "llama2-70b", "baichuan2-7b", "baichuan2-13b", "qwen-7b", "qwen-14b"}) {
    auto config = transformerPreset(name);
    ASSERT_TRUE(config) << config.error().message;
    EXPECT_EQ(config->hiddenDropout, 0.0) << name;
  }
}

/// tinyGpt with hidden dropout and 8 heads, so that tp = 8 divides heads, ffn, vocab and seq.
Config tinyGptForTp8() {
  Config config = tinyGpt();
  config.heads = 8;
  config.kvHeads = 8;
  config.hiddenDropout = 0.1;
  config.parallel = ir::ParallelConfig{.tp = 8, .dp = 2};
  return config;
}

TEST(Transformer, SequenceParallelCutsTheSequenceDimBetweenTensorParallelRegions) {
  using Cuts = ir::StrategyCuts;
  Config config = tinyGptForTp8();
  auto plain = buildTransformer(config);
  ASSERT_TRUE(plain) << plain.error().message;
  config.parallel->sequenceParallel = true;
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  ASSERT_EQ(graph->ops().size(), plain->ops().size());

  const Cuts hiddenAndBias = {{2, 8, 1}, {1}};
  const std::map<std::string, Cuts> sequenceSplit = {
      {"embedding.position_add", {{2, 8, 1}, {8, 1}}},  {"layer1.attn_norm", {{2, 8, 1}, {1}, {1}}},
      {"layer1.attn.o_proj.bias_add", hiddenAndBias},   {"layer1.attn.dropout", {{2, 8, 1}}},
      {"layer1.attn.residual", {{2, 8, 1}, {2, 8, 1}}}, {"layer1.mlp_norm", {{2, 8, 1}, {1}, {1}}},
      {"layer1.mlp.fc2.bias_add", hiddenAndBias},       {"layer1.mlp.dropout", {{2, 8, 1}}},
      {"layer1.mlp.residual", {{2, 8, 1}, {2, 8, 1}}},  {"final_norm", {{2, 8, 1}, {1}, {1}}},
  };
  for (const auto& [name, expected] : sequenceSplit) {
    EXPECT_EQ(opNamed(*graph, name).shard, expected) << name;
  }
  // Every op that is not one of those (in any layer) keeps its Megatron annotation: the matmuls,
  // their column-parallel bias adds, attention, GeLU, the embedding, the head and the loss.
  size_t changed = 0;
  for (size_t i = 0; i < graph->ops().size(); ++i) {
    const ir::Op& op = graph->ops()[i];
    const bool inSequenceRegion =
        op.kind == ir::OpKind::kLayerNorm || op.kind == ir::OpKind::kDropout ||
        op.name.ends_with("residual") || op.name.ends_with("o_proj.bias_add") ||
        op.name.ends_with("fc2.bias_add") || op.name == "embedding.position_add";
    if (inSequenceRegion) {
      ++changed;
      ASSERT_FALSE(op.shard.empty()) << op.name;
      EXPECT_EQ(op.shard[0], (std::vector<int64_t>{2, 8, 1})) << op.name;
      continue;
    }
    EXPECT_EQ(op.shard, plain->ops()[i].shard) << op.name;
  }
  // Per layer 2 norms, 2 row-parallel bias adds, 2 dropouts, 2 residuals; position add, final
  // norm.
  EXPECT_EQ(changed, 8u * 2 + 2);
  EXPECT_EQ(opNamed(*graph, "layer0.attn.q_proj").shard, (Cuts{{2, 1, 1}, {1, 8}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.fc2").shard, (Cuts{{2, 1, 8}, {8, 1}}));
}

TEST(Transformer, SequenceParallelCutsRmsNormsOfLlamaStyleModels) {
  Config config = tinyLlama();
  config.parallel = ir::ParallelConfig{.tp = 2, .sequenceParallel = true};
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  using Cuts = ir::StrategyCuts;
  EXPECT_EQ(opNamed(*graph, "layer0.attn_norm").shard, (Cuts{{1, 2, 1}, {1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.residual").shard, (Cuts{{1, 2, 1}, {1, 2, 1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.down_proj").shard, (Cuts{{1, 1, 2}, {2, 1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.gate_proj").shard, (Cuts{{1, 1, 1}, {1, 2}}));
}

TEST(Transformer, ContextParallelCutsTheSequenceAndGathersKeysForAttention) {
  Config config = tinyLlama();
  config.parallel = ir::ParallelConfig{.tp = 2, .cp = 4, .sequenceParallel = true};
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  using Cuts = ir::StrategyCuts;
  EXPECT_EQ(opNamed(*graph, "embedding").shard, (Cuts{{2, 1}, {1, 4}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn_norm").shard, (Cuts{{1, 8, 1}, {1}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn.q_proj").shard, (Cuts{{1, 4, 1}, {1, 2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.attn.flash_attention").shard,
            (Cuts{{1, 4, 2}, {1, 1, 2}, {1, 1, 2}}));
  EXPECT_EQ(opNamed(*graph, "layer0.mlp.down_proj").shard, (Cuts{{1, 4, 2}, {2, 1}}));
  EXPECT_EQ(opNamed(*graph, "loss").shard, (Cuts{{1, 4, 2}, {1, 4}}));
  config.seq = 36;  // divides by 4 but not by 4 x 2 under sequence parallelism
  EXPECT_EQ(validateTransformerConfig(config).error().message,
            "tiny-llama: seq: 36 (36 of it text) is not divisible by contextParallel 4 x "
            "tensorParallel");
}

TEST(Transformer, SequenceParallelWithoutTensorParallelChangesNothing) {
  for (const std::optional<ir::ParallelConfig>& parallel :
       {std::optional<ir::ParallelConfig>{}, std::optional{ir::ParallelConfig{}}}) {
    Config config = tinyGptForTp8();
    config.parallel = parallel;
    config.seq = 7;  // not divisible by 8: the tp check does not apply
    auto plain = buildTransformer(config);
    ASSERT_TRUE(plain) << plain.error().message;
    config.parallel->sequenceParallel = true;
    auto graph = buildTransformer(config);
    ASSERT_TRUE(graph) << graph.error().message;
    for (size_t i = 0; i < graph->ops().size(); ++i) {
      EXPECT_EQ(graph->ops()[i].shard, plain->ops()[i].shard) << graph->ops()[i].name;
    }
  }
}

TEST(TransformerErrors, DimensionsMustBePositive) {
  Config config = tinyLlama();
  config.layers = 0;
  EXPECT_EQ(errorOf(config), "tiny-llama: layers: expected a positive size, got 0");
  config = tinyLlama();
  config.microBatch = -2;
  EXPECT_EQ(errorOf(config), "tiny-llama: microBatch: expected a positive size, got -2");
  config = tinyLlama();
  config.name = "";
  EXPECT_EQ(errorOf(config), "name: expected a non-empty model name");
}

TEST(TransformerErrors, HeadsMustDivide) {
  Config config = tinyLlama();
  config.heads = 5;
  config.kvHeads = 5;
  EXPECT_EQ(errorOf(config), "tiny-llama: heads: hidden 64 is not divisible by heads 5");
  config = tinyLlama();
  config.kvHeads = 3;
  EXPECT_EQ(errorOf(config), "tiny-llama: kvHeads: heads 4 is not divisible by kvHeads 3");
  config = tinyLlama();
  config.hidden = 36;  // head dim 9
  EXPECT_EQ(errorOf(config),
            "tiny-llama: heads: head dim 9 (hidden / heads) must be even for rotary positions");
  config.position = Config::Position::kAlibi;
  EXPECT_EQ(errorOf(config), "<ok>");
}

TEST(TransformerErrors, ParallelDegreesMustDivide) {
  Config config = tinyLlama();
  config.parallel = ir::ParallelConfig{.dp = 3};
  EXPECT_EQ(errorOf(config), "tiny-llama: microBatch: 4 is not divisible by dataParallel 3");
  config = tinyLlama();
  config.parallel = ir::ParallelConfig{.tp = 4};
  EXPECT_EQ(errorOf(config), "tiny-llama: kvHeads: 2 is not divisible by tensorParallel 4");
  config = tinyLlama();
  config.parallel = ir::ParallelConfig{.tp = 2};
  config.ffn = 97;
  EXPECT_EQ(errorOf(config), "tiny-llama: ffn: 97 is not divisible by tensorParallel 2");
  config = tinyLlama();
  config.parallel = ir::ParallelConfig{.tp = 2};
  config.vocab = 129;
  EXPECT_EQ(errorOf(config), "tiny-llama: vocab: 129 is not divisible by tensorParallel 2");
  config = tinyLlama();
  config.parallel = ir::ParallelConfig{.tp = 2, .dp = 4};
  config.vocab = 130;
  config.headVocab = Config::VocabSplit::kAllDevices;
  EXPECT_EQ(errorOf(config),
            "tiny-llama: vocab: 130 is not divisible by the 8 devices (dp x cp x tp) the head "
            "splits it over");
  config = tinyLlama();
  config.parallel = ir::ParallelConfig{.tp = -1};
  EXPECT_EQ(errorOf(config), "tiny-llama: parallel.tp: expected a positive degree, got -1");
}

TEST(TransformerErrors, SequenceParallelNeedsSeqDivisibleByTensorParallel) {
  Config config = tinyLlama();
  config.parallel = ir::ParallelConfig{.tp = 2};
  config.seq = 9;
  EXPECT_EQ(errorOf(config), "<ok>");
  config.parallel->sequenceParallel = true;
  EXPECT_EQ(errorOf(config),
            "tiny-llama: seq: 9 is not divisible by tensorParallel 2 (sequenceParallel)");
}

TEST(TransformerErrors, HiddenDropoutMustBeARate) {
  Config config = tinyGpt();
  config.hiddenDropout = 1.0;
  EXPECT_EQ(errorOf(config), "tiny-gpt: hiddenDropout: expected a rate in [0, 1), got 1");
  config.hiddenDropout = -0.1;
  EXPECT_EQ(errorOf(config), "tiny-gpt: hiddenDropout: expected a rate in [0, 1), got -0.1");
}

}  // namespace
}  // namespace autopar::frontend

namespace autopar::frontend {
namespace {

/// fp8 training as Transformer Engine runs it: only the layers' linear GEMMs are fp8; every
/// tensor stays bf16, and the LM head stays a bf16 GEMM.
TEST(Transformer, Fp8RunsOnlyTheLayersLinearGemmsInFp8) {
  Config config = tinyLlama();
  config.dtype = ir::DType::kFP8;
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  for (const ir::Tensor& tensor : graph->tensors()) {
    EXPECT_NE(tensor.type.dtype, ir::DType::kFP8) << tensor.name;
  }
  EXPECT_TRUE(opNamed(*graph, "layer0.attn.q_proj").attrs.fp8);
  EXPECT_TRUE(opNamed(*graph, "layer0.mlp.down_proj").attrs.fp8);
  EXPECT_FALSE(opNamed(*graph, "lm_head").attrs.fp8);
  EXPECT_FALSE(opNamed(*graph, "layer0.attn.flash_attention").attrs.fp8);
  config.dtype = ir::DType::kBF16;
  auto bf16 = buildTransformer(config);
  ASSERT_TRUE(bf16);
  EXPECT_EQ(bf16->parameterCount(), graph->parameterCount());
  EXPECT_FALSE(opNamed(*bf16, "layer0.attn.q_proj").attrs.fp8);
}

}  // namespace
}  // namespace autopar::frontend
