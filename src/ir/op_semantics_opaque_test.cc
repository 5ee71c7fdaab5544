// Opaque ops: output types given rather than inferred, memory-bound costs, several outputs.

#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/op_semantics.h"
#include "ir/op_semantics_test_util.h"

namespace autopar::ir {
namespace {

using testing::inferError;
using testing::savedToString;
using testing::type;

OpAttrs topK() {
  OpAttrs attrs;
  attrs.opaqueType = "TopK";
  attrs.outputTypes = {type({8, 5}), type({8, 5}, DType::kI64)};
  return attrs;
}

TEST(OpaqueSemantics, OutputTypesAreTheGivenOnes) {
  const std::vector<TensorType> inputs = {type({8, 1000}), type({1}, DType::kI64)};
  auto outputs = inferOutputTypes(OpKind::kOpaque, topK(), inputs);
  ASSERT_TRUE(outputs.ok()) << outputs.error().message;
  EXPECT_EQ(*outputs, topK().outputTypes);
}

TEST(OpaqueSemantics, CostsAreMemoryBound) {
  const std::vector<TensorType> inputs = {type({8, 1000}), type({1}, DType::kI64)};
  const std::vector<TensorType> outputs = topK().outputTypes;
  EXPECT_EQ(forwardFlops(OpKind::kOpaque, topK(), inputs, outputs), 0);
  // Inputs read once (32000 + 8 bytes), outputs written once (160 + 320 bytes).
  EXPECT_EQ(forwardBytes(OpKind::kOpaque, topK(), inputs, outputs), 32008 + 480);
  const BackwardRule backward = backwardRule(OpKind::kOpaque, topK(), inputs, outputs);
  EXPECT_EQ(backward.flops, 0);
  EXPECT_EQ(savedToString(backward), "in0 in1");
  // Output gradients (480) and saved inputs (32008) read, a gradient written for the fp32 input
  // only (32000): the int64 k has none.
  EXPECT_EQ(backward.bytes, 480 + 32008 + 32000);
}

TEST(OpaqueSemantics, NeedsAnOpTypeAndOutputTypes) {
  OpAttrs unnamed = topK();
  unnamed.opaqueType.clear();
  EXPECT_EQ(inferError(OpKind::kOpaque, unnamed, {type({4})}),
            "Opaque: attrs.op_type is empty, expected the name the source gives the op");
  OpAttrs noOutputs = topK();
  noOutputs.outputTypes.clear();
  EXPECT_EQ(inferError(OpKind::kOpaque, noOutputs, {type({4})}),
            "Opaque: 'TopK': attrs.output_types is empty, expected one type per output");
}

TEST(OpaqueSemantics, GraphGivesEachOutputItsTensor) {
  Graph graph("topk");
  const TensorId x = graph.addTensor("x", {{8, 1000}, DType::kF32}, TensorRole::kInput).value();
  const TensorId k = graph.addTensor("k", {{1}, DType::kI64}, TensorRole::kInput).value();
  auto op = graph.addOp("topk", OpKind::kOpaque, topK(), {x, k}, {"values", "indices"});
  ASSERT_TRUE(op.ok()) << op.error().message;
  EXPECT_EQ(graph.outputTypes(graph.op(*op)), topK().outputTypes);
  EXPECT_EQ(graph.tensor(*graph.findTensor("indices")).type, type({8, 5}, DType::kI64));
  EXPECT_EQ(graph.forwardBytes(graph.op(*op)), 32008 + 480);
  auto oneName = graph.addOp("topk2", OpKind::kOpaque, topK(), {x, k}, {"values2"});
  ASSERT_FALSE(oneName.ok());
  EXPECT_EQ(oneName.error().message, "op 'topk2': Opaque produces 2 output(s), 1 name(s) given");
}

}  // namespace
}  // namespace autopar::ir
