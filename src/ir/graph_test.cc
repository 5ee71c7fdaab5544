#include "ir/graph.h"

#include <gtest/gtest.h>

#include <limits>

namespace autopar::ir {
namespace {

// x [32,784] -> dense1 (MatMul w1) -> h1 -> act (ReLU) -> a1 -> dense2 (MatMul w2) -> y [32,10]
struct Mlp {
  Graph graph{"mlp"};
  TensorId x = -1, w1 = -1, w2 = -1;
  OpId dense1 = -1, act = -1, dense2 = -1;
};

Mlp buildMlp() {
  Mlp mlp;
  Graph& g = mlp.graph;
  mlp.x = g.addTensor("x", {{32, 784}, DType::kF32}, TensorRole::kInput).value();
  mlp.w1 = g.addTensor("w1", {{784, 512}, DType::kF32}, TensorRole::kParameter).value();
  mlp.w2 = g.addTensor("w2", {{512, 10}, DType::kF32}, TensorRole::kParameter).value();
  mlp.dense1 = g.addOp("dense1", OpKind::kMatMul, {}, {mlp.x, mlp.w1}, {"h1"}, "layer.0").value();
  mlp.act = g.addOp("act", OpKind::kReLU, {}, {*g.findTensor("h1")}, {"a1"}, "layer.0").value();
  mlp.dense2 = g.addOp("dense2", OpKind::kMatMul, {}, {*g.findTensor("a1"), mlp.w2}, {"y"}).value();
  return mlp;
}

TEST(Graph, BuildsAnMlpWithInferredShapes) {
  Mlp mlp = buildMlp();
  const Graph& g = mlp.graph;
  EXPECT_EQ(g.name(), "mlp");
  ASSERT_EQ(g.ops().size(), 3u);
  ASSERT_EQ(g.tensors().size(), 6u);
  const Op& dense1 = g.op(mlp.dense1);
  EXPECT_EQ(dense1.id, 0);
  EXPECT_EQ(dense1.name, "dense1");
  EXPECT_EQ(dense1.block, "layer.0");
  EXPECT_EQ(g.op(mlp.dense2).block, "");
  ASSERT_EQ(dense1.outputs.size(), 1u);
  const Tensor& h1 = g.tensor(dense1.outputs[0]);
  EXPECT_EQ(h1.name, "h1");
  EXPECT_EQ(h1.type.shape, (Shape{32, 512}));
  EXPECT_EQ(h1.role, TensorRole::kActivation);
  EXPECT_EQ(g.tensor(*g.findTensor("y")).type.shape, (Shape{32, 10}));
  EXPECT_EQ(g.inputTypes(dense1),
            (std::vector<TensorType>{{{32, 784}, DType::kF32}, {{784, 512}, DType::kF32}}));
  EXPECT_EQ(g.outputTypes(dense1), (std::vector<TensorType>{{{32, 512}, DType::kF32}}));
}

TEST(Graph, RejectsTensorsOverTwoToTheFiftyElements) {
  Graph g("big");
  auto big =
      g.addTensor("big", {{int64_t{1} << 25, int64_t{1} << 26}, DType::kF32}, TensorRole::kInput);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().message,
            "tensor 'big': shape [33554432,67108864] has more than 2^50 elements");
  // An op's output too: a Reshape's new shape is an attribute, not bounded by its input.
  const TensorId x = g.addTensor("x", {{4, 4}, DType::kF32}, TensorRole::kInput).value();
  OpAttrs attrs;
  attrs.newShape = {int64_t{1} << 40, int64_t{1} << 40, 16};
  EXPECT_FALSE(g.addOp("reshape", OpKind::kReshape, attrs, {x}, {"y"}));
  EXPECT_EQ(numElements({int64_t{1} << 40, int64_t{1} << 40}), std::numeric_limits<int64_t>::max());
}

TEST(Graph, ProducersAndConsumers) {
  Mlp mlp = buildMlp();
  const Graph& g = mlp.graph;
  EXPECT_EQ(g.tensor(mlp.x).producer, kNoOp);
  EXPECT_EQ(g.tensor(mlp.x).consumers, (std::vector<OpId>{mlp.dense1}));
  const Tensor& h1 = g.tensor(*g.findTensor("h1"));
  EXPECT_EQ(h1.producer, mlp.dense1);
  EXPECT_EQ(h1.consumers, (std::vector<OpId>{mlp.act}));
  const Tensor& y = g.tensor(*g.findTensor("y"));
  EXPECT_EQ(y.producer, mlp.dense2);
  EXPECT_TRUE(y.consumers.empty());
}

TEST(Graph, AnOpUsingATensorTwiceIsListedTwice) {
  Graph g;
  auto x = g.addTensor("x", {{4}, DType::kF32}, TensorRole::kInput);
  auto square = g.addOp("square", OpKind::kMul, {}, {*x, *x}, {"x2"});
  ASSERT_TRUE(square.ok());
  EXPECT_EQ(g.tensor(*x).consumers, (std::vector<OpId>{*square, *square}));
}

TEST(Graph, FindsByName) {
  Mlp mlp = buildMlp();
  EXPECT_EQ(mlp.graph.findOp("act"), mlp.act);
  EXPECT_EQ(mlp.graph.findTensor("w2"), mlp.w2);
  EXPECT_EQ(mlp.graph.findOp("nope"), std::nullopt);
  EXPECT_EQ(mlp.graph.findTensor("nope"), std::nullopt);
}

TEST(Graph, ParametersAndCount) {
  Mlp mlp = buildMlp();
  EXPECT_EQ(mlp.graph.parameters(), (std::vector<TensorId>{mlp.w1, mlp.w2}));
  EXPECT_EQ(mlp.graph.parameterCount(), 784 * 512 + 512 * 10);
  EXPECT_TRUE(mlp.graph.tensor(mlp.w1).isParameter());
  EXPECT_FALSE(mlp.graph.tensor(mlp.x).isParameter());
}

TEST(Graph, CostWrappersUseTheOpsTypes) {
  Mlp mlp = buildMlp();
  const Op& dense1 = mlp.graph.op(mlp.dense1);
  EXPECT_EQ(mlp.graph.forwardFlops(dense1), 25690112);  // 2 * 32 * 784 * 512
  EXPECT_EQ(mlp.graph.forwardBytes(dense1), (32 * 784 + 784 * 512 + 32 * 512) * 4);
  const BackwardRule rule = mlp.graph.backwardRule(mlp.graph.op(mlp.act));
  EXPECT_EQ(rule.flops, 32 * 512);
  ASSERT_EQ(rule.saved.size(), 1u);
  EXPECT_EQ(rule.saved[0].source, SavedTensor::Source::kOutput);
}

TEST(Graph, RejectsBadTensors) {
  Graph g;
  ASSERT_TRUE(g.addTensor("x", {{2, 3}, DType::kF32}, TensorRole::kInput).ok());
  auto duplicate = g.addTensor("x", {{2}, DType::kF32}, TensorRole::kInput);
  ASSERT_FALSE(duplicate.ok());
  EXPECT_EQ(duplicate.error().message, "tensor 'x': duplicate name");
  auto zeroDim = g.addTensor("z", {{2, 0}, DType::kF32}, TensorRole::kInput);
  ASSERT_FALSE(zeroDim.ok());
  EXPECT_EQ(zeroDim.error().message, "tensor 'z': shape[1] is 0, expected a positive size");
  auto unnamed = g.addTensor("", {{2}, DType::kF32}, TensorRole::kInput);
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.error().message, "tensor name: expected a non-empty string");
  EXPECT_EQ(g.tensors().size(), 1u);
}

TEST(Graph, RejectsDuplicateOpAndOutputNames) {
  Mlp mlp = buildMlp();
  Graph& g = mlp.graph;
  auto sameOp = g.addOp("act", OpKind::kReLU, {}, {mlp.x}, {"a2"});
  ASSERT_FALSE(sameOp.ok());
  EXPECT_EQ(sameOp.error().message, "op 'act': duplicate name");
  auto sameOutput = g.addOp("act2", OpKind::kReLU, {}, {mlp.x}, {"h1"});
  ASSERT_FALSE(sameOutput.ok());
  EXPECT_EQ(sameOutput.error().message,
            "op 'act2': output 'h1': expected a new, non-empty tensor name");
  auto twoNames = g.addOp("act3", OpKind::kReLU, {}, {mlp.x}, {"p", "q"});
  ASSERT_FALSE(twoNames.ok());
  EXPECT_EQ(twoNames.error().message, "op 'act3': ReLU produces 1 output(s), 2 name(s) given");
  EXPECT_EQ(g.ops().size(), 3u);
  EXPECT_EQ(g.tensors().size(), 6u);
}

TEST(Graph, RejectsUnknownInputs) {
  Mlp mlp = buildMlp();
  auto unknown = mlp.graph.addOp("bad", OpKind::kAdd, {}, {mlp.x, 42}, {"out"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "op 'bad': inputs[1]: unknown tensor id 42");
  auto negative = mlp.graph.addOp("bad", OpKind::kReLU, {}, {-1}, {"out"});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().message, "op 'bad': inputs[0]: unknown tensor id -1");
  // Nothing was added and no consumer was recorded.
  EXPECT_EQ(mlp.graph.ops().size(), 3u);
  EXPECT_EQ(mlp.graph.tensor(mlp.x).consumers.size(), 1u);
}

TEST(Graph, ShapeErrorsNameTheOp) {
  Graph g;
  auto x = g.addTensor("x", {{32, 784}, DType::kF32}, TensorRole::kInput);
  auto w = g.addTensor("w", {{64, 512}, DType::kF32}, TensorRole::kParameter);
  auto dense = g.addOp("dense1", OpKind::kMatMul, {}, {*x, *w}, {"h1"});
  ASSERT_FALSE(dense.ok());
  EXPECT_EQ(dense.error().message,
            "op 'dense1': MatMul: inputs[1] dim 0 is 64 but inputs[0] contracts over 784");
  EXPECT_TRUE(g.ops().empty());
  EXPECT_EQ(g.findTensor("h1"), std::nullopt);
  EXPECT_TRUE(g.tensor(*x).consumers.empty());
}

}  // namespace
}  // namespace autopar::ir
