#include "frontend/graph_json.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "frontend/seed_models.h"
#include "frontend/transformer.h"

namespace autopar::frontend {
namespace {

using nlohmann::json;

/// A valid two-op document the error tests mutate one field at a time.
json tinyDocument() {
  return json::parse(R"({
    "format": "autopar.graph", "version": 1, "name": "tiny",
    "tensors": [{"name": "x", "shape": [32, 784], "dtype": "fp32", "role": "input"},
                {"name": "w1", "shape": [784, 512], "role": "parameter"},
                {"name": "b1", "shape": [512], "dtype": "fp32", "role": "parameter"}],
    "ops": [{"name": "dense1", "kind": "MatMul", "inputs": ["x", "w1"], "outputs": ["h1"],
             "shard": [[2, 4], [4, 1]], "output_shapes": [[32, 512]]},
            {"name": "bias1", "kind": "Add", "inputs": ["h1", "b1"], "outputs": ["h2"],
             "block": "dense"}]
  })");
}

/// The error message of parsing `document` as "ffn.json", or "<ok>".
std::string errorOf(const json& document) {
  auto graph = parseGraphJson(document.dump(), "ffn.json");
  return graph ? "<ok>" : graph.error().message;
}

std::string errorOfText(const std::string& text) {
  auto graph = parseGraphJson(text, "ffn.json");
  return graph ? "<ok>" : graph.error().message;
}

TEST(GraphJson, ParsesTensorsOpsAttributesBlocksAndShards) {
  auto graph = parseGraphJson(tinyDocument().dump(), "tiny.json");
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->name(), "tiny");
  ASSERT_EQ(graph->ops().size(), 2u);
  const ir::Op& dense = graph->op(*graph->findOp("dense1"));
  EXPECT_EQ(dense.kind, ir::OpKind::kMatMul);
  EXPECT_EQ(dense.shard, (ir::StrategyCuts{{2, 4}, {4, 1}}));
  EXPECT_EQ(graph->tensor(dense.outputs[0]).type.shape, (ir::Shape{32, 512}));
  const ir::Op& bias = graph->op(*graph->findOp("bias1"));
  EXPECT_EQ(bias.block, "dense");
  EXPECT_TRUE(bias.shard.empty());
  EXPECT_EQ(graph->tensor(*graph->findTensor("w1")).role, ir::TensorRole::kParameter);
  EXPECT_EQ(graph->parameterCount(), 784 * 512 + 512);
}

TEST(GraphJson, AcceptsTheSeedsTupleNotationForShards) {
  json document = tinyDocument();
  document["ops"][0]["shard"] = "((2, 4), (4, 1))";
  document["ops"][1]["shard"] = "((1, 8), (8,))";
  auto graph = parseGraphJson(document.dump(), "tiny.json");
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->op(0).shard, (ir::StrategyCuts{{2, 4}, {4, 1}}));
  EXPECT_EQ(graph->op(1).shard, (ir::StrategyCuts{{1, 8}, {8}}));
}

TEST(GraphJson, TheTupleNotationTakesWhatShardTakes) {
  // Leading zeros, trailing commas after any element, tuples and lists mixed: as --shard.
  for (const char* text : {"((02, 4), (4, 1),)", "([2, 4,], (4, 1,))"}) {
    json document = tinyDocument();
    document["ops"][0]["shard"] = text;
    auto graph = parseGraphJson(document.dump(), "tiny.json");
    ASSERT_TRUE(graph) << text << ": " << graph.error().message;
    EXPECT_EQ(graph->op(0).shard, (ir::StrategyCuts{{2, 4}, {4, 1}})) << text;
  }
  // An empty element, a bracket closing the other kind, a NUL byte: rejected, as --shard does.
  for (const std::string& text : {std::string("((,), (4, 1))"), std::string("((2, 4], (4, 1))"),
                                  std::string("((2, 4), (4, 1))\0x", 19)}) {
    json document = tinyDocument();
    document["ops"][0]["shard"] = text;
    EXPECT_FALSE(parseGraphJson(document.dump(), "tiny.json")) << text;
  }
}

TEST(GraphJson, ReadsAttributesByKind) {
  json document = tinyDocument();
  document["tensors"][1]["shape"] = {512, 784};
  document["ops"][0]["attrs"] = {{"transpose_b", true}};
  document["ops"][0]["shard"] = {{2, 4}, {1, 4}};
  document["ops"].push_back(json::parse(
      R"({"name": "norm", "kind": "RMSNorm", "inputs": ["h2", "b1"], "outputs": ["n"],
          "attrs": {"epsilon": 1e-6}})"));
  document["ops"].push_back(json::parse(
      R"({"name": "mean", "kind": "ReduceMean", "inputs": ["n"], "outputs": ["m"],
          "attrs": {"axes": [-1], "keep_dims": true}})"));
  auto graph = parseGraphJson(document.dump(), "tiny.json");
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_TRUE(graph->op(0).attrs.transposeB);
  EXPECT_DOUBLE_EQ(graph->op(2).attrs.epsilon, 1e-6);
  EXPECT_EQ(graph->op(3).attrs.axes, (std::vector<int64_t>{-1}));
  EXPECT_TRUE(graph->op(3).attrs.keepDims);
  EXPECT_EQ(graph->tensor(graph->op(3).outputs[0]).type.shape, (ir::Shape{32, 1}));
}

TEST(GraphJson, NameDefaultsToTheFileStem) {
  json document = tinyDocument();
  document.erase("name");
  auto graph = parseGraphJson(document.dump(), "graphs/my_model.json");
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->name(), "my_model");
}

/// Everything a reader of the graph sees, keyed by names rather than ids.
void expectSameGraph(const ir::Graph& expected, const ir::Graph& actual) {
  EXPECT_EQ(expected.name(), actual.name());
  ASSERT_EQ(expected.tensors().size(), actual.tensors().size());
  for (const auto& tensor : expected.tensors()) {
    auto id = actual.findTensor(tensor.name);
    ASSERT_TRUE(id) << tensor.name;
    EXPECT_EQ(actual.tensor(*id).type, tensor.type) << tensor.name;
    EXPECT_EQ(actual.tensor(*id).role, tensor.role) << tensor.name;
  }
  ASSERT_EQ(expected.ops().size(), actual.ops().size());
  for (size_t i = 0; i < expected.ops().size(); ++i) {
    const ir::Op& want = expected.ops()[i];
    const ir::Op& got = actual.ops()[i];
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.kind, want.kind) << want.name;
    EXPECT_EQ(got.attrs, want.attrs) << want.name;
    EXPECT_EQ(got.block, want.block) << want.name;
    EXPECT_EQ(got.shard, want.shard) << want.name;
    ASSERT_EQ(got.inputs.size(), want.inputs.size()) << want.name;
    for (size_t j = 0; j < want.inputs.size(); ++j) {
      EXPECT_EQ(actual.tensor(got.inputs[j]).name, expected.tensor(want.inputs[j]).name);
    }
  }
}

TEST(GraphJson, RoundTripsTheAnnotatedFfn) {
  auto ffn = buildAnnotatedFfn(32);
  ASSERT_TRUE(ffn) << ffn.error().message;
  const json document = graphToJson(*ffn);
  auto reread = parseGraphJson(dumpGraphJson(document), "ffn.json");
  ASSERT_TRUE(reread) << reread.error().message;
  expectSameGraph(*ffn, *reread);
  EXPECT_EQ(graphToJson(*reread), document);
}

TEST(GraphJson, RoundTripsAnAnnotatedTransformerWithEveryFeature) {
  TransformerConfig config;
  config.name = "tiny-llm";
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.kvHeads = 2;
  config.ffn = 128;
  config.vocab = 256;
  config.seq = 16;
  config.microBatch = 4;
  config.qkvBias = true;
  config.tiedEmbeddings = true;
  config.normEpsilon = 1e-6;
  config.parallel = ir::ParallelConfig{.tp = 2, .dp = 2};
  auto graph = buildTransformer(config);
  ASSERT_TRUE(graph) << graph.error().message;
  const json document = graphToJson(*graph);
  auto reread = parseGraphJson(dumpGraphJson(document), "tiny-llm.json");
  ASSERT_TRUE(reread) << reread.error().message;
  expectSameGraph(*graph, *reread);
  EXPECT_EQ(graphToJson(*reread), document);
}

TEST(GraphJson, RoundTripsAnOpaqueOpWithSeveralOutputs) {
  ir::Graph graph("topk");
  auto x = graph.addTensor("x", {{8, 1000}, ir::DType::kBF16}, ir::TensorRole::kInput);
  ir::OpAttrs attrs;
  attrs.opaqueType = "TopK";
  attrs.outputTypes = {{{8, 5}, ir::DType::kBF16}, {{8, 5}, ir::DType::kI64}};
  auto op = graph.addOp("topk", ir::OpKind::kOpaque, attrs, {*x}, {"values", "indices"});
  ASSERT_TRUE(op) << op.error().message;
  const json document = graphToJson(graph);
  EXPECT_EQ(document["ops"][0]["attrs"], json::parse(R"({"op_type": "TopK", "output_types": [
      {"shape": [8, 5], "dtype": "bf16"}, {"shape": [8, 5], "dtype": "int64"}]})"));
  const std::string text = dumpGraphJson(document);
  EXPECT_NE(text.find("\"attrs\": {\"op_type\": \"TopK\", \"output_types\": [{\"shape\": [8, 5], "
                      "\"dtype\": \"bf16\"}, {\"shape\": [8, 5], \"dtype\": \"int64\"}]}"),
            std::string::npos)
      << text;
  auto reread = parseGraphJson(text, "topk.json");
  ASSERT_TRUE(reread) << reread.error().message;
  expectSameGraph(graph, *reread);
  EXPECT_EQ(graphToJson(*reread), document);
}

TEST(GraphJson, WritesOnlyTheAttributesAKindReadsAndDiffersOn) {
  ir::Graph graph("attrs");
  auto q = graph.addTensor("q", {{2, 8, 64}, ir::DType::kBF16}, ir::TensorRole::kInput);
  ir::OpAttrs attrs;
  attrs.numHeads = 4;
  attrs.numKvHeads = 0;
  attrs.epsilon = 0.5;  // not read by FlashAttention: not written
  auto op = graph.addOp("attn", ir::OpKind::kFlashAttention, attrs, {*q, *q, *q}, {"out"});
  ASSERT_TRUE(op) << op.error().message;
  const json entry = graphToJson(graph)["ops"][0];
  EXPECT_EQ(entry["attrs"], json::parse(R"({"num_heads": 4})"));
  EXPECT_EQ(entry["output_shapes"], json::parse("[[2, 8, 64]]"));
}

TEST(GraphJson, DumpPutsOneTensorOrOpPerLineWithKeysInDocumentedOrder) {
  auto ffn = buildAnnotatedFfn(32);
  ASSERT_TRUE(ffn);
  const std::string text = dumpGraphJson(graphToJson(*ffn));
  EXPECT_NE(text.find("\n    {\"name\": \"x\", \"shape\": [32, 784], \"dtype\": \"fp32\", "
                      "\"role\": \"input\"},\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{\"name\": \"dense1.matmul\", \"kind\": \"MatMul\", \"inputs\": [\"x\", "
                      "\"dense1.weight\"], \"outputs\": [\"dense1.matmul\"], \"shard\": [[2, 4], "
                      "[4, 1]], \"output_shapes\": [[32, 512]]}"),
            std::string::npos)
      << text;
  const std::string header = "{\n  \"format\": \"autopar.graph\",\n  \"version\": 1,\n";
  EXPECT_EQ(text.substr(0, header.size()), header);
  EXPECT_EQ(text.substr(text.size() - 4), "]\n}\n");
}

TEST(GraphJsonErrors, JsonSyntaxErrorNamesTheLine) {
  const std::string text =
      "{\n  \"format\": \"autopar.graph\",\n  \"version\": 1,\n  \"ops\": ]\n}";
  EXPECT_EQ(errorOfText(text),
            "ffn.json: line 4: JSON parse error: syntax error while parsing value - unexpected "
            "']'; expected '[', '{', or a literal");
  EXPECT_EQ(errorOfText(""),
            "ffn.json: line 1: JSON parse error: syntax error while parsing value - unexpected end "
            "of input; expected '[', '{', or a literal");
}

TEST(GraphJsonErrors, Header) {
  json document = tinyDocument();
  document["format"] = "onnx";
  EXPECT_EQ(errorOf(document), "ffn.json: format: expected \"autopar.graph\", got \"onnx\"");
  document = tinyDocument();
  document["version"] = 2;
  EXPECT_EQ(errorOf(document),
            "ffn.json: version: unsupported version 2 (this build reads version 1)");
  document = tinyDocument();
  document.erase("version");
  EXPECT_EQ(errorOf(document), "ffn.json: top level: missing required field 'version'");
  document = tinyDocument();
  document["nodes"] = json::array();
  EXPECT_EQ(errorOf(document),
            "ffn.json: top level: unknown field 'nodes' (expected one of: format, version, name, "
            "description, tensors, ops, blocks)");
  EXPECT_EQ(errorOfText("[1, 2]"), "ffn.json: top level: expected an object, got array");
  document = tinyDocument();
  document["ops"] = json::object();
  EXPECT_EQ(errorOf(document), "ffn.json: ops: expected an array, got object");
}

TEST(GraphJsonErrors, Tensors) {
  json document = tinyDocument();
  document["tensors"][2]["name"] = "x";
  EXPECT_EQ(errorOf(document),
            "ffn.json: tensors[2].name: duplicate tensor name 'x' (first defined at tensors[0])");
  document = tinyDocument();
  document["tensors"][1]["shape"][1] = 0;
  EXPECT_EQ(errorOf(document), "ffn.json: tensors[1].shape[1]: expected a positive integer, got 0");
  document = tinyDocument();
  document["tensors"][1]["shape"][0] = 7.5;
  EXPECT_EQ(errorOf(document), "ffn.json: tensors[1].shape[0]: expected an integer, got 7.5");
  document = tinyDocument();
  document["tensors"][0]["dtype"] = "f32";
  EXPECT_EQ(errorOf(document),
            "ffn.json: tensors[0].dtype: unknown dtype 'f32', expected one of fp32, bf16, fp16, "
            "fp8, int64, int32, int8, bool");
  document = tinyDocument();
  document["tensors"][0]["role"] = "activation";
  EXPECT_EQ(errorOf(document),
            "ffn.json: tensors[0].role: activations are declared as ops' outputs; expected "
            "\"input\" or \"parameter\"");
  document = tinyDocument();
  document["tensors"][0]["role"] = "weight";
  EXPECT_EQ(errorOf(document),
            "ffn.json: tensors[0].role: expected \"input\" or \"parameter\", got \"weight\"");
  document = tinyDocument();
  document["tensors"][0].erase("shape");
  EXPECT_EQ(errorOf(document), "ffn.json: tensors[0]: missing required field 'shape'");
  document = tinyDocument();
  document["tensors"][0]["layout"] = "nchw";
  EXPECT_EQ(errorOf(document),
            "ffn.json: tensors[0]: unknown field 'layout' (expected one of: name, shape, dtype, "
            "role, parallel_optimizer)");
}

TEST(GraphJsonErrors, OpNamesKindsAndInputs) {
  json document = tinyDocument();
  document["ops"][1]["kind"] = "Foo";
  EXPECT_EQ(errorOf(document), "ffn.json: ops[1].kind: unknown op kind 'Foo'");
  document["ops"][1]["kind"] = "matmul";
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1].kind: unknown op kind 'matmul' (did you mean 'MatMul'?)");
  document = tinyDocument();
  document["ops"][1]["inputs"][1] = "w9";
  EXPECT_EQ(errorOf(document), "ffn.json: ops[1].inputs[1]: unknown tensor 'w9'");
  document = tinyDocument();
  document["ops"][1]["inputs"][1] = 3;
  EXPECT_EQ(errorOf(document), "ffn.json: ops[1].inputs[1]: expected a string, got number");
  document = tinyDocument();
  std::swap(document["ops"][0], document["ops"][1]);
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0].inputs[0]: tensor 'h1' is produced by a later op (ops[1]); list ops "
            "in topological order");
  document = tinyDocument();
  document["ops"][1]["name"] = "dense1";
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1].name: duplicate op name 'dense1' (first used by ops[0])");
  document = tinyDocument();
  document["ops"][1]["name"] = "";
  EXPECT_EQ(errorOf(document), "ffn.json: ops[1].name: expected a non-empty string");
}

TEST(GraphJsonErrors, OpOutputsAndShapes) {
  json document = tinyDocument();
  document["ops"][1]["outputs"][0] = "x";
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1].outputs[0]: tensor 'x' is already defined (at tensors[0])");
  document["ops"][1]["outputs"][0] = "h1";
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1].outputs[0]: tensor 'h1' is already defined (at ops[0].outputs[0])");
  document["ops"][1]["outputs"] = {"h2", "h3"};
  EXPECT_EQ(errorOf(document), "ffn.json: ops[1].outputs: Add produces 1 output(s), got 2 name(s)");
  document = tinyDocument();
  document["tensors"][1]["shape"] = {64, 512};
  document["ops"][0].erase("shard");
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0]: MatMul: inputs[1] dim 0 is 64 but inputs[0] contracts over 784");
  document = tinyDocument();
  document["ops"][0]["output_shapes"] = {{32, 256}};
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0].output_shapes[0]: declared [32,256] but shape inference gives "
            "[32,512]");
  document["ops"][0]["output_shapes"] = {{32, 512}, {1}};
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0].output_shapes: expected 1 shape(s), one per output, got 2");
}

TEST(GraphJsonErrors, Attributes) {
  json document = tinyDocument();
  document["ops"][0]["attrs"] = {{"transpose_c", true}};
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0].attrs: unknown attribute 'transpose_c' (MatMul takes transpose_a, "
            "transpose_b)");
  document["ops"][0]["attrs"] = {{"epsilon", 1e-5}};
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0].attrs: MatMul does not take attribute 'epsilon' (MatMul takes "
            "transpose_a, transpose_b)");
  document["ops"][0]["attrs"] = {{"transpose_b", 1}};
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0].attrs.transpose_b: expected true or false, got number");
  document["ops"][0]["attrs"] = json::array();
  EXPECT_EQ(errorOf(document), "ffn.json: ops[0].attrs: expected an object, got array");
  document = tinyDocument();
  document["ops"][1]["attrs"] = {{"axis", 0}};
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1].attrs: Add does not take attribute 'axis' (Add takes no "
            "attributes)");
}

TEST(GraphJsonErrors, OpaqueAttributes) {
  json document = tinyDocument();
  document["ops"][1] = json::parse(R"({"name": "norm", "kind": "Opaque", "inputs": ["h1"],
      "outputs": ["y"], "attrs": {"op_type": "LpNormalization",
                                  "output_types": [{"shape": [32, 512]}]}})");
  EXPECT_EQ(errorOf(document), "<ok>");
  document["ops"][1]["output_shapes"] = {{32, 256}};
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1].output_shapes[0]: declared [32,256] but shape inference gives "
            "[32,512]");
  document["ops"][1].erase("output_shapes");
  document["ops"][1]["attrs"].erase("op_type");
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1]: Opaque: attrs.op_type is empty, expected the name the source gives "
            "the op");
  document["ops"][1]["attrs"]["op_type"] = "LpNormalization";
  document["ops"][1]["attrs"]["output_types"] = json::array();
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1]: Opaque: 'LpNormalization': attrs.output_types is empty, expected "
            "one type per output");
  document["ops"][1]["attrs"]["output_types"] = json::parse(R"([{"shape": [32, 0]}])");
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1].attrs.output_types[0].shape[1]: expected a positive integer, got 0");
  document["ops"][1]["attrs"]["output_types"] = json::parse(R"([{"shape": [4], "type": "x"}])");
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1].attrs.output_types[0]: unknown field 'type' (expected one of: shape, "
            "dtype)");
  document["ops"][1]["attrs"]["output_types"] = json::parse(R"([{"shape": [4]}, {"shape": [4]}])");
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1].outputs: Opaque produces 2 output(s), got 1 name(s)");
}

TEST(GraphJsonErrors, Shards) {
  json document = tinyDocument();
  document["ops"][0]["shard"] = {{2, 4}, {4, 1}, {1}};
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0].shard: expected one list of cuts per input (2 inputs), got 3");
  document["ops"][0]["shard"] = {{2, 4}, {4, 1, 1}};
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0].shard[1]: expected one cut per dimension of inputs[1] (rank 2), "
            "got 3");
  document["ops"][0]["shard"] = {{2, 0}, {4, 1}};
  EXPECT_EQ(errorOf(document), "ffn.json: ops[0].shard[0][1]: expected a positive integer, got 0");
  document["ops"][0]["shard"] = "((2,4),(4,1)";
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0].shard: cannot read \"((2,4),(4,1)\" as cuts; expected e.g. \"((2, "
            "4), (4, 1))\"");
  document["ops"][0]["shard"] = 8;
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0].shard: expected a list of cuts per input, got number");
}

TEST(GraphJsonFiles, ReadGraphJsonNamesThePathInErrors) {
  const std::string missing = "/nonexistent/dir/graph.json";
  auto graph = readGraphJson(missing);
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.error().message, "/nonexistent/dir/graph.json: cannot open file for reading");
}

TEST(GraphJsonFiles, WriteThenReadRoundTrips) {
  auto ffn = buildAnnotatedFfn(16);
  ASSERT_TRUE(ffn);
  const auto path = std::filesystem::temp_directory_path() / "autopar_frontend_roundtrip.json";
  ASSERT_TRUE(writeGraphJson(*ffn, path.string()));
  auto reread = readGraphJson(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(reread) << reread.error().message;
  expectSameGraph(*ffn, *reread);
  EXPECT_FALSE(writeGraphJson(*ffn, "/nonexistent/dir/out.json"));
}

}  // namespace
}  // namespace autopar::frontend

namespace autopar::frontend {
namespace {

json planFeaturesDocument() {
  return json::parse(R"({
    "format": "autopar.graph", "version": 1, "name": "features",
    "tensors": [{"name": "ids", "shape": [8, 4], "dtype": "int32", "role": "input"},
                {"name": "table", "shape": [64, 16], "role": "parameter",
                 "parallel_optimizer": false},
                {"name": "w", "shape": [16, 16], "role": "parameter"}],
    "ops": [{"name": "lookup", "kind": "Gather", "inputs": ["table", "ids"], "outputs": ["e"],
             "attrs": {"manual_split": [10, 20, 30, 4]}, "placement": "host",
             "block": "embedding"},
            {"name": "dense", "kind": "MatMul", "inputs": ["e", "w"], "outputs": ["y"],
             "recompute": true, "block": "layer1.dense"}],
    "blocks": {"layer1": {"pipeline_stage": 0, "pipeline_segment": 1, "comm_fusion": 2,
                          "recompute": true}}
  })");
}

TEST(GraphJsonPlanFeatures, ReadsOpParameterAndBlockSettingsAndWritesThemBack) {
  auto graph = parseGraphJson(planFeaturesDocument().dump(), "features.json");
  ASSERT_TRUE(graph) << graph.error().message;
  const ir::Op& lookup = graph->op(*graph->findOp("lookup"));
  EXPECT_EQ(lookup.attrs.manualSplit, (std::vector<int64_t>{10, 20, 30, 4}));
  EXPECT_EQ(lookup.placement, ir::Placement::kHost);
  const ir::Op& dense = graph->op(*graph->findOp("dense"));
  EXPECT_TRUE(dense.recompute);
  EXPECT_EQ(graph->tensor(*graph->findTensor("table")).parallelOptimizer, false);
  EXPECT_FALSE(graph->tensor(*graph->findTensor("w")).parallelOptimizer.has_value());
  const ir::BlockSettings settings = graph->settingsOf(dense);
  EXPECT_EQ(settings.pipelineStage, 0);
  EXPECT_EQ(settings.pipelineSegment, 1);
  EXPECT_EQ(settings.commFusion, 2);
  EXPECT_TRUE(settings.recompute);
  EXPECT_FALSE(graph->settingsOf(lookup).recompute);
  auto again = parseGraphJson(dumpGraphJson(graphToJson(*graph)), "again.json");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(graphToJson(*again), graphToJson(*graph));
}

TEST(GraphJsonPlanFeatures, ErrorsNameTheField) {
  json document = planFeaturesDocument();
  document["ops"][0]["attrs"]["manual_split"] = {10, 20, 30};
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[0]: Gather: attrs.manual_split [10,20,30] sums to 60, expected the 64 "
            "rows of input 0 (dim 0)");
  document = planFeaturesDocument();
  document["blocks"]["layer9"] = {{"comm_fusion", 1}};
  EXPECT_EQ(errorOf(document),
            "ffn.json: blocks.layer9: block 'layer9': no op of graph 'features' is in this block");
  document = planFeaturesDocument();
  document["ops"][1]["placement"] = "cpu";
  EXPECT_EQ(errorOf(document),
            "ffn.json: ops[1].placement: expected \"device\" or \"host\", got \"cpu\"");
  document = planFeaturesDocument();
  document["tensors"][0]["parallel_optimizer"] = true;
  EXPECT_EQ(errorOf(document),
            "ffn.json: tensors[0].parallel_optimizer: only parameters take this flag");
}

}  // namespace
}  // namespace autopar::frontend
