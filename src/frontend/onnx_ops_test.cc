#include <gtest/gtest.h>

#include "frontend/onnx_import.h"
#include "frontend/onnx_test_util.h"

namespace autopar::frontend {
namespace {

using M = OnnxTestModel;

const ir::Op& opNamed(const ir::Graph& graph, const std::string& name) {
  auto id = graph.findOp(name);
  EXPECT_TRUE(id.has_value()) << "no op '" << name << "'";
  return graph.op(id.value_or(0));
}

ir::Shape shapeOf(const ir::Graph& graph, const std::string& tensor) {
  auto id = graph.findTensor(tensor);
  EXPECT_TRUE(id.has_value()) << "no tensor '" << tensor << "'";
  return id ? graph.tensor(*id).type.shape : ir::Shape{};
}

/// One attention head group in plain ONNX ops: embedding Gather, LayerNormalization, q/k/v
/// MatMuls, Reshape (with 0 = copy), Transpose, BatchMatMul, scale Div, Softmax, Gelu MLP.
OnnxTestModel attentionModel() {
  OnnxTestModel model;
  model.input("ids", {2, 8}, onnx::TensorProto_DataType_INT64);
  model.floatInitializer("embed.weight", {100, 16});
  model.floatInitializer("ln.scale", {16});
  model.floatInitializer("ln.bias", {16});
  model.intInitializer("heads_shape", {0, 0, 4, 4});
  model.intInitializer("merge_shape", {2, 8, -1});
  model.scalarInitializer("scale.value", 2.0f);
  for (const char* name : {"wq", "wk", "wv"}) model.floatInitializer(name, {16, 16});
  model.node("Gather", "embed", {"embed.weight", "ids"}, {"x"});
  M::floatAttribute(model.node("LayerNormalization", "ln", {"x", "ln.scale", "ln.bias"},
                               {"xn", "mean", "inv_std"}),
                    "epsilon", 1e-6f);
  for (const char* head : {"q", "k", "v"}) {
    const std::string h = head;
    model.node("MatMul", h + "_proj", {"xn", "w" + h}, {h});
    model.node("Reshape", h + "_split", {h, "heads_shape"}, {h + "4"});
  }
  M::intsAttribute(model.node("Transpose", "q_t", {"q4"}, {"qt"}), "perm", {0, 2, 1, 3});
  M::intsAttribute(model.node("Transpose", "k_t", {"k4"}, {"kt"}), "perm", {0, 2, 3, 1});
  M::intsAttribute(model.node("Transpose", "v_t", {"v4"}, {"vt"}), "perm", {0, 2, 1, 3});
  model.node("MatMul", "scores", {"qt", "kt"}, {"s"});
  model.node("Div", "scale", {"s", "scale.value"}, {"ss"});
  M::intAttribute(model.node("Softmax", "softmax", {"ss"}, {"p"}), "axis", -1);
  model.node("MatMul", "context", {"p", "vt"}, {"c"});
  M::intsAttribute(model.node("Transpose", "merge_t", {"c"}, {"ct"}), "perm", {0, 2, 1, 3});
  model.node("Reshape", "merge", {"ct", "merge_shape"}, {"o"});
  model.node("Add", "residual", {"x", "o"}, {"r"});
  M::stringAttribute(model.node("Gelu", "gelu", {"r"}, {"g"}), "approximate", "tanh");
  return model;
}

TEST(OnnxOps, AttentionBlock) {
  auto graph = attentionModel().import();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(opNamed(*graph, "embed").kind, ir::OpKind::kGather);
  EXPECT_EQ(shapeOf(*graph, "x"), (ir::Shape{2, 8, 16}));
  EXPECT_EQ(graph->tensor(*graph->findTensor("ids")).type.dtype, ir::DType::kI64);
  const ir::Op& norm = opNamed(*graph, "ln");
  EXPECT_EQ(norm.kind, ir::OpKind::kLayerNorm);
  EXPECT_DOUBLE_EQ(norm.attrs.epsilon, static_cast<double>(1e-6f));
  EXPECT_EQ(opNamed(*graph, "q_proj").kind, ir::OpKind::kMatMul);
  EXPECT_EQ(opNamed(*graph, "q_split").attrs.newShape, (ir::Shape{2, 8, 4, 4}));
  EXPECT_EQ(shapeOf(*graph, "kt"), (ir::Shape{2, 4, 4, 8}));
  EXPECT_EQ(opNamed(*graph, "scores").kind, ir::OpKind::kBatchMatMul);
  EXPECT_EQ(shapeOf(*graph, "s"), (ir::Shape{2, 4, 8, 8}));
  EXPECT_EQ(opNamed(*graph, "softmax").attrs.axis, 3);
  EXPECT_EQ(opNamed(*graph, "context").kind, ir::OpKind::kBatchMatMul);
  EXPECT_EQ(shapeOf(*graph, "o"), (ir::Shape{2, 8, 16}));
  EXPECT_EQ(opNamed(*graph, "gelu").kind, ir::OpKind::kGeLU);
  // Shape tensors stay attributes; float constants (the scale) are parameters.
  EXPECT_FALSE(graph->findTensor("heads_shape").has_value());
  EXPECT_EQ(graph->tensor(*graph->findTensor("scale.value")).role, ir::TensorRole::kParameter);
  EXPECT_EQ(graph->parameterCount(), 100 * 16 + 16 + 16 + 3 * 16 * 16 + 1);
  EXPECT_EQ(graph->ops().size(), 19u);
}

TEST(OnnxOps, LayerNormStatisticsOutputsAreNotModelled) {
  OnnxTestModel model = attentionModel();
  model.node("Relu", "uses_mean", {"mean"}, {"bad"});
  EXPECT_EQ(model.errorOf(),
            "test.onnx: node 'uses_mean' (op_type Relu): input 0 ('mean'): output 1 of node 'ln' "
            "(LayerNormalization) is not modelled");
}

TEST(OnnxOps, ElementwiseCastDropoutIdentity) {
  OnnxTestModel model(13);
  model.input("x", {4, 6});
  model.input("z", {4, 6});
  model.scalarInitializer("ratio", 0.1f);
  const std::pair<const char*, ir::OpKind> unary[] = {
      {"Sigmoid", ir::OpKind::kSigmoid}, {"Tanh", ir::OpKind::kTanh}, {"Exp", ir::OpKind::kExp},
      {"Neg", ir::OpKind::kNeg},         {"Sqrt", ir::OpKind::kSqrt}, {"Relu", ir::OpKind::kReLU}};
  std::string current = "x";
  for (const auto& [opType, kind] : unary) {
    model.node(opType, std::string("op_") + opType, {current}, {std::string("t_") + opType});
    current = std::string("t_") + opType;
  }
  model.node("Sub", "sub", {current, "z"}, {"d"});
  model.node("Mul", "mul", {"d", "z"}, {"m"});
  model.node("Dropout", "drop", {"m", "ratio"}, {"dr", "mask"});
  model.node("Identity", "same", {"dr"}, {"alias"});
  M::intAttribute(model.node("Cast", "cast", {"alias"}, {"half"}), "to",
                  onnx::TensorProto_DataType_FLOAT16);
  auto graph = model.import();
  ASSERT_TRUE(graph) << graph.error().message;
  for (const auto& [opType, kind] : unary) {
    EXPECT_EQ(opNamed(*graph, std::string("op_") + opType).kind, kind) << opType;
  }
  EXPECT_EQ(opNamed(*graph, "sub").kind, ir::OpKind::kSub);
  EXPECT_EQ(opNamed(*graph, "mul").kind, ir::OpKind::kMul);
  EXPECT_DOUBLE_EQ(opNamed(*graph, "drop").attrs.dropoutRate, static_cast<double>(0.1f));
  EXPECT_FALSE(graph->findOp("same").has_value());  // Identity adds no op
  const ir::Op& cast = opNamed(*graph, "cast");
  EXPECT_EQ(cast.attrs.castTo, ir::DType::kF16);
  EXPECT_EQ(graph->tensor(cast.inputs[0]).name, "dr");
  EXPECT_EQ(graph->tensor(cast.outputs[0]).type.dtype, ir::DType::kF16);
  EXPECT_EQ(graph->ops().size(), 10u);
  // The ratio was read as an attribute, not turned into a parameter.
  EXPECT_FALSE(graph->findTensor("ratio").has_value());
}

TEST(OnnxOps, DropoutRatioAttributeBeforeOpset12) {
  OnnxTestModel model(11);
  model.input("x", {4, 6});
  M::floatAttribute(model.node("Dropout", "drop", {"x"}, {"y"}), "ratio", 0.25f);
  auto graph = model.import();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_DOUBLE_EQ(opNamed(*graph, "drop").attrs.dropoutRate, 0.25);
}

TEST(OnnxOps, GemmVariants) {
  OnnxTestModel model;
  model.input("x", {8, 4});
  model.floatInitializer("w", {4, 6});
  model.floatInitializer("wt", {6, 4});
  model.floatInitializer("b", {6});
  model.node("Gemm", "plain", {"x", "w"}, {"y1"});
  M::intAttribute(model.node("Gemm", "transposed", {"x", "wt", "b"}, {"y2"}), "transB", 1);
  M::intAttribute(model.node("Gemm", "ta", {"y1", "y2"}, {"y3"}), "transA", 1);
  auto graph = model.import();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(opNamed(*graph, "plain").kind, ir::OpKind::kMatMul);
  EXPECT_FALSE(graph->findOp("plain.bias_add").has_value());
  EXPECT_TRUE(opNamed(*graph, "transposed").attrs.transposeB);
  EXPECT_EQ(opNamed(*graph, "transposed.bias_add").kind, ir::OpKind::kAdd);
  EXPECT_TRUE(opNamed(*graph, "ta").attrs.transposeA);
  EXPECT_EQ(shapeOf(*graph, "y3"), (ir::Shape{6, 6}));
}

TEST(OnnxOps, GemmHelperTensorAvoidsOnnxValueNames) {
  // The MatMul's output would be called "layer" but a later ONNX value already has that name.
  OnnxTestModel model;
  model.input("x", {8, 4});
  model.floatInitializer("w", {4, 6});
  model.floatInitializer("b", {6});
  model.node("Gemm", "layer", {"x", "w", "b"}, {"y"});
  model.node("Relu", "relu", {"y"}, {"layer"});
  auto graph = model.import();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->tensor(opNamed(*graph, "layer").outputs[0]).name, "layer_1");
  EXPECT_EQ(graph->tensor(opNamed(*graph, "relu").outputs[0]).name, "layer");
}

TEST(OnnxOps, ReductionsAcrossOpsets) {
  OnnxTestModel model(18);
  model.input("x", {2, 3, 4});
  model.intInitializer("last", {-1});
  M::intAttribute(model.node("ReduceSum", "sum", {"x", "last"}, {"s"}), "keepdims", 0);
  model.node("ReduceMean", "mean", {"x", "last"}, {"m"});
  model.node("ReduceMax", "max_all", {"x"}, {"a"});
  M::intAttribute(model.node("ReduceSum", "noop", {"x"}, {"n"}), "noop_with_empty_axes", 1);
  model.node("Relu", "after_noop", {"n"}, {"r"});
  auto graph = model.import();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(shapeOf(*graph, "s"), (ir::Shape{2, 3}));
  EXPECT_EQ(shapeOf(*graph, "m"), (ir::Shape{2, 3, 1}));
  EXPECT_EQ(opNamed(*graph, "mean").kind, ir::OpKind::kReduceMean);
  EXPECT_EQ(shapeOf(*graph, "a"), (ir::Shape{1, 1, 1}));
  EXPECT_EQ(opNamed(*graph, "max_all").kind, ir::OpKind::kReduceMax);
  EXPECT_FALSE(graph->findOp("noop").has_value());
  EXPECT_EQ(graph->tensor(opNamed(*graph, "after_noop").inputs[0]).name, "x");

  OnnxTestModel old(11);
  old.input("x", {2, 3, 4});
  M::intsAttribute(old.node("ReduceMean", "mean", {"x"}, {"m"}), "axes", {1});
  auto oldGraph = old.import();
  ASSERT_TRUE(oldGraph) << oldGraph.error().message;
  EXPECT_EQ(shapeOf(*oldGraph, "m"), (ir::Shape{2, 1, 4}));
}

TEST(OnnxOps, ShapeOps) {
  OnnxTestModel model(13);
  model.input("x", {2, 3, 4});
  model.intInitializer("starts", {1, -3});
  model.intInitializer("ends", {100, -1});
  model.intInitializer("axes", {1, 2});
  model.intInitializer("zero", {0});
  model.node("Slice", "slice", {"x", "starts", "ends", "axes"}, {"sl"});
  M::intAttribute(model.node("Concat", "concat", {"sl", "sl"}, {"cat"}), "axis", 1);
  model.node("Flatten", "flatten", {"cat"}, {"flat"});
  model.node("Unsqueeze", "unsqueeze", {"flat", "zero"}, {"un"});
  model.node("Squeeze", "squeeze", {"un", "zero"}, {"sq"});
  model.node("Transpose", "reverse", {"x"}, {"rev"});
  auto graph = model.import();
  ASSERT_TRUE(graph) << graph.error().message;
  const ir::Op& slice = opNamed(*graph, "slice");
  EXPECT_EQ(slice.attrs.starts, (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(slice.attrs.ends, (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(shapeOf(*graph, "sl"), (ir::Shape{2, 2, 2}));
  EXPECT_EQ(shapeOf(*graph, "cat"), (ir::Shape{2, 4, 2}));
  EXPECT_EQ(opNamed(*graph, "flatten").kind, ir::OpKind::kReshape);
  EXPECT_EQ(shapeOf(*graph, "flat"), (ir::Shape{2, 8}));
  EXPECT_EQ(shapeOf(*graph, "un"), (ir::Shape{1, 2, 8}));
  EXPECT_EQ(shapeOf(*graph, "sq"), (ir::Shape{2, 8}));
  EXPECT_EQ(opNamed(*graph, "reverse").attrs.perm, (std::vector<int64_t>{2, 1, 0}));
}

TEST(OnnxOps, OldOpsetAttributesAndConstantNodes) {
  OnnxTestModel model(9);
  model.input("x", {2, 3, 4});
  auto& slice = model.node("Slice", "slice", {"x"}, {"sl"});
  M::intsAttribute(slice, "starts", {1});
  M::intsAttribute(slice, "ends", {3});
  M::intsAttribute(slice, "axes", {2});
  M::intsAttribute(model.node("Constant", "shape_const", {}, {"shape"}), "value_ints", {6, -1});
  model.node("Reshape", "reshape", {"sl", "shape"}, {"r"});
  M::intsAttribute(model.node("Unsqueeze", "unsqueeze", {"r"}, {"u"}), "axes", {0, -1});
  M::intsAttribute(model.node("Squeeze", "squeeze_all", {"u"}, {"q"}), "axes", {});
  auto graph = model.import();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(shapeOf(*graph, "sl"), (ir::Shape{2, 3, 2}));
  EXPECT_EQ(shapeOf(*graph, "r"), (ir::Shape{6, 2}));
  EXPECT_EQ(shapeOf(*graph, "u"), (ir::Shape{1, 6, 2, 1}));
  EXPECT_EQ(shapeOf(*graph, "q"), (ir::Shape{6, 2}));  // empty axes drop every size-1 dim
  EXPECT_FALSE(graph->findOp("shape_const").has_value());
}

TEST(OnnxOps, MappingErrors) {
  const auto errorOfNode = [](const std::string& opType, std::vector<std::string> inputs,
                              auto&& decorate, int64_t opset = 17) {
    OnnxTestModel model(opset);
    model.input("x", {2, 3, 4});
    model.input("v", {4});
    model.floatInitializer("w", {4, 5});
    model.intInitializer("two", {2});
    model.input("dyn_shape", {1}, onnx::TensorProto_DataType_INT64);
    decorate(model.node(opType, "n", inputs, {"y"}));
    return model.errorOf();
  };
  const auto none = [](onnx::NodeProto&) {};
  EXPECT_EQ(errorOfNode("Gemm", {"w", "w"}, [](auto& n) { M::floatAttribute(n, "alpha", 0.5f); }),
            "test.onnx: node 'n' (op_type Gemm): attribute 'alpha' is 0.5; only alpha = 1 is "
            "supported");
  EXPECT_EQ(errorOfNode("Gemm", {"x", "w"}, none),
            "test.onnx: node 'n' (op_type Gemm): input 0 has rank 3, expected 2");
  EXPECT_EQ(errorOfNode("MatMul", {"v", "w"}, none),
            "test.onnx: node 'n' (op_type MatMul): MatMul of ranks 1 and 2: 1-D operands are not "
            "supported");
  EXPECT_EQ(errorOfNode("MatMul", {"x", "x"}, none),
            "test.onnx: node 'n' (op_type MatMul): BatchMatMul: inputs[1] dim 1 is 3 but inputs[0] "
            "contracts over 4");
  EXPECT_EQ(errorOfNode("Reshape", {"x", "dyn_shape"}, none),
            "test.onnx: node 'n' (op_type Reshape): input 1 ('dyn_shape') must be a constant (an "
            "initializer or a Constant node's output)");
  EXPECT_EQ(errorOfNode("Gather", {"x", "two"}, [](auto& n) { M::intAttribute(n, "axis", 1); }),
            "test.onnx: node 'n' (op_type Gather): attribute 'axis' is 1; only axis 0 (a table "
            "lookup) is supported");
  EXPECT_EQ(errorOfNode(
                "Softmax", {"x"}, [](auto& n) { M::intAttribute(n, "axis", 1); }, 11),
            "test.onnx: node 'n' (op_type Softmax): Softmax before opset 13 flattens the dims from "
            "axis 1 on; only axis 2 (the last) maps to the IR");
  EXPECT_EQ(errorOfNode("Softmax", {"x"}, [](auto& n) { M::intAttribute(n, "axis", 3); }),
            "test.onnx: node 'n' (op_type Softmax): attribute 'axis' is 3, expected a dim of a "
            "rank-3 input");
  EXPECT_EQ(errorOfNode("LayerNormalization", {"x", "v"}, none),
            "test.onnx: node 'n' (op_type LayerNormalization): input 2 (B) is missing; "
            "LayerNormalization without a bias is not supported");
  EXPECT_EQ(errorOfNode("Cast", {"x"}, [](auto& n) { M::intAttribute(n, "to", 11); }),
            "test.onnx: node 'n' (op_type Cast): attribute 'to': ONNX dtype DOUBLE is not "
            "supported (supported: FLOAT, FLOAT16, BFLOAT16, INT64, INT32, INT8, BOOL)");
  EXPECT_EQ(errorOfNode("Concat", {"x", "x"}, none),
            "test.onnx: node 'n' (op_type Concat): attribute 'axis' is missing");
  EXPECT_EQ(errorOfNode("Transpose", {"x"}, [](auto& n) { M::intAttribute(n, "perm", 1); }),
            "test.onnx: node 'n' (op_type Transpose): attribute 'perm': expected type INTS, got "
            "INT");
  EXPECT_EQ(errorOfNode("Gelu", {"x"}, [](auto& n) { M::stringAttribute(n, "approximate", "x"); }),
            "test.onnx: node 'n' (op_type Gelu): attribute 'approximate' is 'x', expected 'none' "
            "or 'tanh'");
  EXPECT_EQ(errorOfNode("Squeeze", {"x", "two"}, none),
            "test.onnx: node 'n' (op_type Squeeze): axes entry 2 names dim 2 of size 4, expected "
            "size 1");
}

TEST(OnnxOps, SliceStepsMustBeOne) {
  OnnxTestModel model;
  model.input("x", {2, 6});
  model.intInitializer("starts", {0});
  model.intInitializer("ends", {6});
  model.intInitializer("axes", {1});
  model.intInitializer("steps", {2});
  model.node("Slice", "n", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  EXPECT_EQ(model.errorOf(),
            "test.onnx: node 'n' (op_type Slice): steps [2]: only steps of 1 are supported");
}

}  // namespace
}  // namespace autopar::frontend
