/// \file
/// ONNX ops that compute: MatMul, Gemm, elementwise ops, Cast, Dropout, Softmax,
/// LayerNormalization and the reductions. Each mapper reads the node's inputs and attributes
/// (across the opsets that moved attributes to inputs) and adds the matching IR op.

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "frontend/onnx_context.h"

namespace autopar::frontend {

namespace {

/// Inputs [0, count) of the node as tensors.
Expected<std::vector<ir::TensorId>> inputs(OnnxContext& context, const onnx::NodeProto& node,
                                           int count) {
  std::vector<ir::TensorId> tensors;
  for (int index = 0; index < count; ++index) {
    auto tensor = context.input(node, index);
    if (!tensor) return tensor.error();
    tensors.push_back(*tensor);
  }
  return tensors;
}

/// MatMul: B of rank 2 gives IR MatMul ([..., m, k] x [k, n]); A and B of equal rank >= 3 give
/// BatchMatMul. ONNX's other cases (1-D operands, broadcast batch dims) have no IR op.
Status mapMatMul(OnnxContext& context, const onnx::NodeProto& node) {
  auto operands = inputs(context, node, 2);
  if (!operands) return operands.error();
  const size_t rankA = context.typeOf((*operands)[0]).shape.size();
  const size_t rankB = context.typeOf((*operands)[1]).shape.size();
  if (rankA < 2 || rankB < 2) {
    return Error{
        fmt::format("MatMul of ranks {} and {}: 1-D operands are not supported", rankA, rankB)};
  }
  if (rankB == 2) return context.addNodeOp(node, ir::OpKind::kMatMul, {}, *operands);
  if (rankA != rankB) {
    return Error{fmt::format(
        "MatMul of ranks {} and {}: batch dims must match (broadcasting is not supported)", rankA,
        rankB)};
  }
  return context.addNodeOp(node, ir::OpKind::kBatchMatMul, {}, *operands);
}

/// Gemm: Y = A' B' + C with A' = transA ? A^T : A (likewise B). alpha and beta must be 1 (the IR
/// has no scaled matmul); C becomes an Add named "<node>.bias_add".
Status mapGemm(OnnxContext& context, const onnx::NodeProto& node) {
  const bool hasBias = OnnxContext::hasInput(node, 2);
  for (const char* scale : {"alpha", "beta"}) {
    if (std::string_view(scale) == "beta" && !hasBias) continue;  // beta scales C only
    auto value = OnnxContext::floatAttribute(node, scale);
    if (!value) return value.error();
    if (value->value_or(1.0) != 1.0) {
      return Error{
          fmt::format("attribute '{}' is {}; only {} = 1 is supported", scale, **value, scale)};
    }
  }
  ir::OpAttrs attrs;
  for (auto [name, flag] :
       {std::pair{"transA", &attrs.transposeA}, std::pair{"transB", &attrs.transposeB}}) {
    auto value = OnnxContext::intAttribute(node, name);
    if (!value) return value.error();
    *flag = value->value_or(0) != 0;
  }
  auto operands = inputs(context, node, 2);
  if (!operands) return operands.error();
  for (int index = 0; index < 2; ++index) {
    const size_t rank = context.typeOf((*operands)[index]).shape.size();
    if (rank != 2) return Error{fmt::format("input {} has rank {}, expected 2", index, rank)};
  }
  if (!hasBias) return context.addNodeOp(node, ir::OpKind::kMatMul, attrs, *operands);
  auto product = context.addIntermediateOp(context.opName(), ir::OpKind::kMatMul, attrs, *operands);
  if (!product) return product.error();
  auto bias = context.input(node, 2);
  if (!bias) return bias.error();
  return context.addNamedNodeOp(context.opName() + ".bias_add", node, ir::OpKind::kAdd, {},
                                {*product, *bias});
}

template <ir::OpKind kKind, int kInputCount>
Status mapElementwise(OnnxContext& context, const onnx::NodeProto& node) {
  auto operands = inputs(context, node, kInputCount);
  if (!operands) return operands.error();
  return context.addNodeOp(node, kKind, {}, *operands);
}

/// Gelu (opset 20): both `approximate` values ("none", "tanh") map to the IR's GeLU, whose cost
/// does not depend on the approximation.
Status mapGelu(OnnxContext& context, const onnx::NodeProto& node) {
  auto approximate = OnnxContext::stringAttribute(node, "approximate");
  if (!approximate) return approximate.error();
  const std::string mode = approximate->value_or("none");
  if (mode != "none" && mode != "tanh") {
    return Error{fmt::format("attribute 'approximate' is '{}', expected 'none' or 'tanh'", mode)};
  }
  return mapElementwise<ir::OpKind::kGeLU, 1>(context, node);
}

Status mapCast(OnnxContext& context, const onnx::NodeProto& node) {
  auto to = OnnxContext::intAttribute(node, "to");
  if (!to) return to.error();
  if (!*to) return Error{"attribute 'to' is missing"};
  auto dtype = onnxDType(static_cast<int32_t>(**to));
  if (!dtype) return dtype.error().in("attribute 'to'");
  auto x = context.input(node, 0);
  if (!x) return x.error();
  ir::OpAttrs attrs;
  attrs.castTo = *dtype;
  return context.addNodeOp(node, ir::OpKind::kCast, attrs, {*x});
}

/// Dropout: the ratio is input 1 from opset 12 on, attribute `ratio` before; 0.5 by default.
/// The mask output is not modelled (the caller marks it unavailable).
Status mapDropout(OnnxContext& context, const onnx::NodeProto& node) {
  ir::OpAttrs attrs;
  attrs.dropoutRate = 0.5;
  if (OnnxContext::hasInput(node, 1)) {
    auto ratio = context.constantScalar(node, 1);
    if (!ratio) return ratio.error();
    attrs.dropoutRate = *ratio;
  } else {
    auto ratio = OnnxContext::floatAttribute(node, "ratio");
    if (!ratio) return ratio.error();
    attrs.dropoutRate = ratio->value_or(attrs.dropoutRate);
  }
  auto x = context.input(node, 0);
  if (!x) return x.error();
  return context.addNodeOp(node, ir::OpKind::kDropout, attrs, {*x});
}

/// Softmax over `axis` (default -1 from opset 13, 1 before). Before opset 13 ONNX flattens the
/// dims from `axis` on into one, which equals the IR's per-axis softmax only for the last axis.
Status mapSoftmax(OnnxContext& context, const onnx::NodeProto& node) {
  auto x = context.input(node, 0);
  if (!x) return x.error();
  const auto rank = static_cast<int64_t>(context.typeOf(*x).shape.size());
  auto axisAttribute = OnnxContext::intAttribute(node, "axis");
  if (!axisAttribute) return axisAttribute.error();
  const bool flattening = context.opset() < 13;
  auto axis =
      normalizedOnnxAxis("attribute 'axis'", axisAttribute->value_or(flattening ? 1 : -1), rank);
  if (!axis) return axis.error();
  if (flattening && *axis != rank - 1) {
    return Error{fmt::format(
        "Softmax before opset 13 flattens the dims from axis {} on; only axis {} (the last) "
        "maps to the IR",
        *axis, rank - 1)};
  }
  ir::OpAttrs attrs;
  attrs.axis = *axis;
  return context.addNodeOp(node, ir::OpKind::kSoftmax, attrs, {*x});
}

/// LayerNormalization (opset 17) over the last axis, with its Scale and B inputs.
Status mapLayerNorm(OnnxContext& context, const onnx::NodeProto& node) {
  if (!OnnxContext::hasInput(node, 2)) {
    return Error{"input 2 (B) is missing; LayerNormalization without a bias is not supported"};
  }
  auto operands = inputs(context, node, 3);
  if (!operands) return operands.error();
  const auto rank = static_cast<int64_t>(context.typeOf((*operands)[0]).shape.size());
  auto axisAttribute = OnnxContext::intAttribute(node, "axis");
  if (!axisAttribute) return axisAttribute.error();
  auto axis = normalizedOnnxAxis("attribute 'axis'", axisAttribute->value_or(-1), rank);
  if (!axis) return axis.error();
  if (*axis != rank - 1) {
    return Error{fmt::format("attribute 'axis' is {}; only the last axis ({}) is supported",
                             **axisAttribute, rank - 1)};
  }
  auto epsilon = OnnxContext::floatAttribute(node, "epsilon");
  if (!epsilon) return epsilon.error();
  ir::OpAttrs attrs;
  attrs.epsilon = epsilon->value_or(1e-5);
  return context.addNodeOp(node, ir::OpKind::kLayerNorm, attrs, *operands);
}

/// ReduceSum/Mean/Max: axes from input 1 (ReduceSum from opset 13, the others from 18) or the
/// `axes` attribute; none means every axis, or no-op with noop_with_empty_axes = 1.
template <ir::OpKind kKind>
Status mapReduce(OnnxContext& context, const onnx::NodeProto& node) {
  auto x = context.input(node, 0);
  if (!x) return x.error();
  auto axes = context.intsFromInputOrAttribute(node, 1, "axes");
  if (!axes) return axes.error();
  auto keepDims = OnnxContext::intAttribute(node, "keepdims");
  if (!keepDims) return keepDims.error();
  auto noopWithEmptyAxes = OnnxContext::intAttribute(node, "noop_with_empty_axes");
  if (!noopWithEmptyAxes) return noopWithEmptyAxes.error();
  ir::OpAttrs attrs;
  attrs.axes = axes->value_or(std::vector<int64_t>{});
  if (attrs.axes.empty() && noopWithEmptyAxes->value_or(0) != 0) return context.alias(node, *x);
  attrs.keepDims = keepDims->value_or(1) != 0;
  return context.addNodeOp(node, kKind, attrs, {*x});
}

}  // namespace

void addMathOpMappers(std::unordered_map<std::string, OnnxOpMapper>& mappers) {
  using ir::OpKind;
  mappers["MatMul"] = mapMatMul;
  mappers["Gemm"] = mapGemm;
  mappers["Add"] = mapElementwise<OpKind::kAdd, 2>;
  mappers["Sub"] = mapElementwise<OpKind::kSub, 2>;
  mappers["Mul"] = mapElementwise<OpKind::kMul, 2>;
  mappers["Div"] = mapElementwise<OpKind::kDiv, 2>;
  mappers["Relu"] = mapElementwise<OpKind::kReLU, 1>;
  mappers["Gelu"] = mapGelu;
  mappers["Sigmoid"] = mapElementwise<OpKind::kSigmoid, 1>;
  mappers["Tanh"] = mapElementwise<OpKind::kTanh, 1>;
  mappers["Exp"] = mapElementwise<OpKind::kExp, 1>;
  mappers["Neg"] = mapElementwise<OpKind::kNeg, 1>;
  mappers["Sqrt"] = mapElementwise<OpKind::kSqrt, 1>;
  mappers["Cast"] = mapCast;
  mappers["Dropout"] = mapDropout;
  mappers["Softmax"] = mapSoftmax;
  mappers["LayerNormalization"] = mapLayerNorm;
  mappers["ReduceSum"] = mapReduce<OpKind::kReduceSum>;
  mappers["ReduceMean"] = mapReduce<OpKind::kReduceMean>;
  mappers["ReduceMax"] = mapReduce<OpKind::kReduceMax>;
}

}  // namespace autopar::frontend
