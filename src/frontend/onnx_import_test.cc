#include "frontend/onnx_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "frontend/graph_json.h"
#include "frontend/onnx_test_util.h"
#include "frontend/seed_models.h"

namespace autopar::frontend {
namespace {

const std::string kSourceDir = AUTOPAR_SOURCE_DIR;
const std::string kMlpPath = kSourceDir + "/examples/onnx/mlp.onnx";
const std::string kLstmPath = kSourceDir + "/tests/data/onnx/unsupported_lstm.onnx";

std::string readBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

/// Writes `bytes` to a fresh file under the test temp dir and returns its path.
std::string writeTemp(const std::string& name, const std::string& bytes) {
  const auto path = std::filesystem::path(testing::TempDir()) / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

struct ExpectedOp {
  std::string name;
  ir::OpKind kind;
  ir::Shape outputShape;
};

TEST(OnnxImport, SeedMlpImportsToTheExpectedOps) {
  auto graph = readOnnx(kMlpPath);
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->name(), "seed_mlp");
  const std::vector<ExpectedOp> expected = {
      {"layer1", ir::OpKind::kMatMul, {32, 512}},
      {"layer1.bias_add", ir::OpKind::kAdd, {32, 512}},
      {"relu1", ir::OpKind::kReLU, {32, 512}},
      {"layer2", ir::OpKind::kMatMul, {32, 512}},
      {"layer2.bias_add", ir::OpKind::kAdd, {32, 512}},
      {"relu2", ir::OpKind::kReLU, {32, 512}},
      {"layer3", ir::OpKind::kMatMul, {32, 1}},
      {"layer3.bias_add", ir::OpKind::kAdd, {32, 1}},
  };
  ASSERT_EQ(graph->ops().size(), expected.size());
  for (size_t index = 0; index < expected.size(); ++index) {
    const ir::Op& op = graph->ops()[index];
    EXPECT_EQ(op.name, expected[index].name);
    EXPECT_EQ(op.kind, expected[index].kind) << op.name;
    EXPECT_EQ(graph->tensor(op.outputs[0]).type.shape, expected[index].outputShape) << op.name;
  }
  // Gemm's transB = 1 (PyTorch's [out, in] weights) becomes transposeB on the MatMul.
  const ir::Op& layer1 = graph->op(*graph->findOp("layer1"));
  EXPECT_TRUE(layer1.attrs.transposeB);
  EXPECT_FALSE(layer1.attrs.transposeA);
  EXPECT_EQ(graph->tensor(layer1.inputs[1]).type.shape, (ir::Shape{512, 784}));
  EXPECT_EQ(graph->tensor(layer1.inputs[0]).role, ir::TensorRole::kInput);
  // The last op writes the ONNX graph output.
  EXPECT_EQ(graph->tensor(graph->ops().back().outputs[0]).name, "y");
}

TEST(OnnxImport, SeedMlpMatchesTheBuiltInSeedNetwork) {
  auto imported = readOnnx(kMlpPath);
  ASSERT_TRUE(imported) << imported.error().message;
  auto builtIn = buildSeedMlp(32);
  ASSERT_TRUE(builtIn) << builtIn.error().message;
  EXPECT_EQ(imported->parameterCount(), 665'089);
  EXPECT_EQ(imported->parameterCount(), builtIn->parameterCount());
  EXPECT_EQ(imported->parameters().size(), 6u);
  double importedFlops = 0;
  double builtInFlops = 0;
  for (const auto& op : imported->ops()) importedFlops += imported->forwardFlops(op);
  for (const auto& op : builtIn->ops()) builtInFlops += builtIn->forwardFlops(op);
  EXPECT_DOUBLE_EQ(importedFlops, builtInFlops);
}

/// Options that collect the import's warnings instead of printing them.
OnnxImportOptions collecting(std::vector<std::string>& warnings, int64_t dynamicDimValue = 0) {
  OnnxImportOptions options;
  options.dynamicDimValue = dynamicDimValue;
  options.onWarning = [&warnings](const std::string& line) { warnings.push_back(line); };
  return options;
}

TEST(OnnxImport, UntranslatedOpWithAKnownOutputShapeIsReplicated) {
  // The LSTM's output y is typed by the graph's outputs: it becomes an Opaque op.
  std::vector<std::string> warnings;
  auto graph = readOnnx(kLstmPath, collecting(warnings));
  ASSERT_TRUE(graph) << graph.error().message;
  ASSERT_EQ(graph->ops().size(), 2u);
  const ir::Op& lstm = graph->ops()[1];
  EXPECT_EQ(lstm.name, "lstm");
  EXPECT_EQ(lstm.kind, ir::OpKind::kOpaque);
  EXPECT_EQ(lstm.attrs.opaqueType, "LSTM");
  ASSERT_EQ(lstm.outputs.size(), 1u);
  EXPECT_EQ(graph->tensor(lstm.outputs[0]).type, (ir::TensorType{{4, 1, 2, 5}, ir::DType::kF32}));
  ASSERT_EQ(lstm.inputs.size(), 3u);
  EXPECT_EQ(graph->tensor(lstm.inputs[1]).role, ir::TensorRole::kParameter);  // lstm.W
  EXPECT_EQ(
      warnings,
      (std::vector<std::string>{
          kLstmPath + ": ONNX op 'LSTM' (node 'lstm') is not known; replicated on every device"}));
}

TEST(OnnxImport, UnknownOpsWithValueInfoBecomeOpaqueAndWarnOncePerType) {
  OnnxTestModel model;
  model.input("x", {2, 3});
  model.node("Foo", "n1", {"x"}, {"a"});
  model.node("Relu", "relu", {"a"}, {"r"});
  model.node("Foo", "n2", {"r"}, {"b"});
  model.node("Foo", "n3", {"b"}, {"c"});
  model.node("Bar", "n4", {"c", "x"}, {"d"}).set_domain("com.example");
  model.proto().add_opset_import()->set_domain("com.example");
  model.valueInfo("a", {2, 3});
  model.valueInfo("b", {2, 3}, onnx::TensorProto_DataType_BFLOAT16);
  model.valueInfo("c", {6});
  model.output("d", {6, 2}, onnx::TensorProto_DataType_INT64);
  std::vector<std::string> warnings;
  auto graph = model.import(collecting(warnings));
  ASSERT_TRUE(graph) << graph.error().message;
  ASSERT_EQ(graph->ops().size(), 5u);
  const ir::Op& n2 = graph->op(*graph->findOp("n2"));
  EXPECT_EQ(n2.kind, ir::OpKind::kOpaque);
  EXPECT_EQ(n2.attrs.opaqueType, "Foo");
  EXPECT_EQ(graph->tensor(n2.outputs[0]).type, (ir::TensorType{{2, 3}, ir::DType::kBF16}));
  const ir::Op& n4 = graph->op(*graph->findOp("n4"));
  EXPECT_EQ(n4.attrs.opaqueType, "com.example.Bar");
  EXPECT_EQ(n4.inputs.size(), 2u);
  EXPECT_EQ(graph->tensor(n4.outputs[0]).type, (ir::TensorType{{6, 2}, ir::DType::kI64}));
  EXPECT_EQ(warnings,
            (std::vector<std::string>{
                "test.onnx: ONNX op 'Foo' (node 'n1' and 2 more) is not known; replicated on "
                "every device",
                "test.onnx: ONNX op 'com.example.Bar' (node 'n4') is not known; replicated on "
                "every device"}));
}

TEST(OnnxImport, UnknownOpWithoutOutputShapesIsAnErrorNamingNodeAndType) {
  OnnxTestModel model;
  model.input("x", {2, 3});
  model.node("Relu", "relu", {"x"}, {"r"});
  model.node("Foo", "n1", {"r"}, {"y"});
  std::vector<std::string> warnings;
  EXPECT_THAT(model.errorOf(collecting(warnings)),
              testing::StartsWith(
                  "test.onnx: node 'n1' (op_type Foo): unsupported ONNX op, and output 0 ('y') has "
                  "no known shape; to replicate the op, give each of its outputs a static shape in "
                  "the graph's value_info; supported: Add, Cast, Concat, "));
  EXPECT_TRUE(warnings.empty());
}

TEST(OnnxImport, EveryOutputOfAnUnknownOpNeedsAStaticType) {
  OnnxTestModel model;
  model.input("x", {-1, 3});
  model.node("Foo", "n1", {"x"}, {"a", "", "b"});
  model.valueInfo("a", {-1, 3});  // "batch", the graph input's dynamic dim
  auto& seq = model.valueInfo("b", {-1, 3});
  seq.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("seq");
  std::vector<std::string> warnings;
  EXPECT_THAT(model.errorOf(collecting(warnings, 4)),
              testing::StartsWith("test.onnx: node 'n1' (op_type Foo): unsupported ONNX op, and "
                                  "output 2 ('b') has a dynamic dim 0 ('seq'); to replicate the "
                                  "op, give each of its outputs a static shape"));
  auto* valueInfo = model.proto().mutable_graph()->mutable_value_info();
  valueInfo->DeleteSubrange(1, 1);  // the "seq" entry
  model.valueInfo("b", {4, 3}, onnx::TensorProto_DataType_DOUBLE);
  EXPECT_THAT(model.errorOf(collecting(warnings, 4)),
              testing::HasSubstr("output 2 ('b') has element type DOUBLE, which autopar does not "
                                 "model; "));
  valueInfo->DeleteSubrange(1, 1);
  model.valueInfo("b", {5, 3}, onnx::TensorProto_DataType_INT32);
  auto graph = model.import(collecting(warnings, 4));
  ASSERT_TRUE(graph) << graph.error().message;
  const ir::Op& op = graph->op(*graph->findOp("n1"));
  ASSERT_EQ(op.outputs.size(), 2u);  // the empty output name is an output left out
  EXPECT_EQ(graph->tensor(op.outputs[0]).type.shape, (ir::Shape{4, 3}));
  EXPECT_EQ(graph->tensor(op.outputs[1]).type, (ir::TensorType{{5, 3}, ir::DType::kI32}));
}

TEST(OnnxImport, OnnxShapeInferenceTypesStandardOpsAutoparDoesNotTranslate) {
  // TopK has an ONNX schema: shape inference types both outputs without any value_info, with the
  // graph input's dynamic batch dim given its size.
  OnnxTestModel model;
  model.input("x", {-1, 1000});
  model.intInitializer("k", {5});
  model.node("TopK", "topk", {"x", "k"}, {"values", "indices"});
  model.node("Relu", "relu", {"values"}, {"y"});
  std::vector<std::string> warnings;
  auto graph = model.import(collecting(warnings, 8));
  ASSERT_TRUE(graph) << graph.error().message;
  const ir::Op& topk = graph->op(*graph->findOp("topk"));
  EXPECT_EQ(topk.kind, ir::OpKind::kOpaque);
  EXPECT_EQ(graph->outputTypes(topk),
            (std::vector<ir::TensorType>{{{8, 5}, ir::DType::kF32}, {{8, 5}, ir::DType::kI64}}));
  EXPECT_EQ(graph->tensor(*graph->findTensor("y")).type.shape, (ir::Shape{8, 5}));
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(OnnxImport, AnImportedOpaqueOpReadsBackFromGraphJson) {
  OnnxTestModel model;
  model.input("x", {8, 1000});
  model.intInitializer("k", {5});
  model.node("TopK", "topk", {"x", "k"}, {"values", "indices"});
  std::vector<std::string> warnings;
  auto graph = model.import(collecting(warnings));
  ASSERT_TRUE(graph) << graph.error().message;
  const std::string dump = dumpGraphJson(graphToJson(*graph));
  auto reread = parseGraphJson(dump, "dump.json");
  ASSERT_TRUE(reread) << reread.error().message;
  EXPECT_EQ(dumpGraphJson(graphToJson(*reread)), dump);
  EXPECT_EQ(reread->op(*reread->findOp("topk")).attrs, graph->op(*graph->findOp("topk")).attrs);
}

TEST(OnnxImport, UnnamedNodesAndOtherDomainsAreNamedInErrors) {
  OnnxTestModel model;
  model.input("x", {2, 3});
  model.node("Relu", "", {"x"}, {"r"});
  auto& fused = model.node("FusedGemm", "", {"r"}, {"y"});
  fused.set_domain("com.microsoft");
  EXPECT_THAT(
      model.errorOf(),
      testing::StartsWith("test.onnx: node 'FusedGemm_1' (op_type com.microsoft.FusedGemm): "
                          "unsupported ONNX op, and output 0 ('y') has no known shape; "));
}

TEST(OnnxImport, MissingFile) {
  auto graph = readOnnx("/nonexistent/model.onnx");
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.error().message, "/nonexistent/model.onnx: cannot open file for reading");
}

TEST(OnnxImport, CorruptFile) {
  const std::string truncated = readBytes(kMlpPath).substr(0, 4096);
  const std::string path = writeTemp("truncated.onnx", truncated);
  auto graph = readOnnx(path);
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.error().message, path + ": not a valid ONNX file (protobuf decoding failed)");
}

TEST(OnnxImport, EmptyFileHasNoGraph) {
  const std::string path = writeTemp("empty.onnx", "");
  auto graph = readOnnx(path);
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.error().message, path + ": not an ONNX model: it has no graph");
}

TEST(OnnxImport, ModelWithoutDefaultOpset) {
  OnnxTestModel model;
  model.proto().mutable_opset_import(0)->set_domain("com.example");
  EXPECT_EQ(model.errorOf(), "test.onnx: the model imports no opset of the default ONNX domain");
}

TEST(OnnxImport, DynamicDimsNeedAValue) {
  OnnxTestModel model;
  model.input("x", {-1, 784});
  model.floatInitializer("w", {784, 10});
  model.node("MatMul", "dense", {"x", "w"}, {"y"});
  EXPECT_EQ(model.errorOf(),
            "test.onnx: graph input 'x': dim 0 ('batch') is dynamic; set a size for dynamic dims "
            "(OnnxImportOptions::dynamicDimValue)");
  auto graph = model.import(OnnxImportOptions{.dynamicDimValue = 64});
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->tensor(*graph->findTensor("y")).type.shape, (ir::Shape{64, 10}));
}

TEST(OnnxImport, DtypesMapOrAreRejectedByName) {
  OnnxTestModel model;
  model.input("ids", {2, 8}, onnx::TensorProto_DataType_INT64);
  model.input("mask", {2, 8}, onnx::TensorProto_DataType_BOOL);
  model.input("h", {2, 8}, onnx::TensorProto_DataType_BFLOAT16);
  model.input("f", {2, 8}, onnx::TensorProto_DataType_FLOAT16);
  model.input("i", {2, 8}, onnx::TensorProto_DataType_INT32);
  model.input("b", {2, 8}, onnx::TensorProto_DataType_INT8);
  model.node("Identity", "id", {"h"}, {"out"});
  model.node("Relu", "relu", {"out"}, {"y"});
  auto graph = model.import();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->tensor(*graph->findTensor("ids")).type.dtype, ir::DType::kI64);
  EXPECT_EQ(graph->tensor(*graph->findTensor("mask")).type.dtype, ir::DType::kBool);
  EXPECT_EQ(graph->tensor(*graph->findTensor("h")).type.dtype, ir::DType::kBF16);
  EXPECT_EQ(graph->tensor(*graph->findTensor("f")).type.dtype, ir::DType::kF16);
  EXPECT_EQ(graph->tensor(*graph->findTensor("i")).type.dtype, ir::DType::kI32);
  EXPECT_EQ(graph->tensor(*graph->findTensor("b")).type.dtype, ir::DType::kI8);

  OnnxTestModel doubles;
  doubles.input("x", {2}, onnx::TensorProto_DataType_DOUBLE);
  EXPECT_EQ(doubles.errorOf(),
            "test.onnx: graph input 'x': ONNX dtype DOUBLE is not supported (supported: FLOAT, "
            "FLOAT16, BFLOAT16, INT64, INT32, INT8, BOOL)");
}

TEST(OnnxImport, InitializersOfOtherDtypesAreRejectedWhereUsed) {
  OnnxTestModel model;
  model.input("x", {2, 3});
  auto* weight = model.proto().mutable_graph()->add_initializer();
  weight->set_name("w");
  weight->set_data_type(onnx::TensorProto_DataType_UINT8);
  weight->add_dims(3);
  model.node("Add", "add", {"x", "w"}, {"y"});
  EXPECT_EQ(model.errorOf(),
            "test.onnx: node 'add' (op_type Add): constant 'w': ONNX dtype UINT8 is not supported "
            "(supported: FLOAT, FLOAT16, BFLOAT16, INT64, INT32, INT8, BOOL)");
}

TEST(OnnxImport, InputsBackedByInitializersAreConstants) {
  // Models before IR version 4 also list initializers among the graph inputs.
  OnnxTestModel model;
  model.input("x", {2, 3});
  model.input("w", {3, 4});
  model.floatInitializer("w", {3, 4});
  model.node("MatMul", "mm", {"x", "w"}, {"y"});
  auto graph = model.import();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->tensor(*graph->findTensor("w")).role, ir::TensorRole::kParameter);
}

TEST(OnnxImport, NodesMustBeInTopologicalOrder) {
  OnnxTestModel model;
  model.input("x", {2, 3});
  model.node("Relu", "second", {"r"}, {"y"});
  model.node("Relu", "first", {"x"}, {"r"});
  EXPECT_EQ(model.errorOf(),
            "test.onnx: node 'second' (op_type Relu): input 0 ('r'): unknown value (not a graph "
            "input, an initializer or the output of an earlier node; nodes must be in topological "
            "order)");
}

TEST(OnnxImport, GraphWithoutOps) {
  OnnxTestModel model;
  model.input("x", {2, 3});
  EXPECT_EQ(model.errorOf(), "test.onnx: the graph has no ops to plan");
}

}  // namespace
}  // namespace autopar::frontend
