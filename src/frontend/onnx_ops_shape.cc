/// \file
/// ONNX ops that move or re-view data: Gather, Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
/// Concat, Slice, Identity, and Constant (a value, not an op). Shapes, axes, starts and ends must
/// be constants; they become IR attributes.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <memory>
#include <numeric>

#include "frontend/onnx_context.h"

namespace autopar::frontend {

namespace {

int64_t rankOf(OnnxContext& context, ir::TensorId tensor) {
  return static_cast<int64_t>(context.typeOf(tensor).shape.size());
}

Status addReshape(OnnxContext& context, const onnx::NodeProto& node, ir::TensorId x,
                  ir::Shape newShape) {
  ir::OpAttrs attrs;
  attrs.newShape = std::move(newShape);
  return context.addNodeOp(node, ir::OpKind::kReshape, attrs, {x});
}

/// Gather on axis 0: data is the table, indices stay integer tensors.
Status mapGather(OnnxContext& context, const onnx::NodeProto& node) {
  auto table = context.input(node, 0);
  if (!table) return table.error();
  auto indices = context.input(node, 1);
  if (!indices) return indices.error();
  auto axisAttribute = OnnxContext::intAttribute(node, "axis");
  if (!axisAttribute) return axisAttribute.error();
  auto axis =
      normalizedOnnxAxis("attribute 'axis'", axisAttribute->value_or(0), rankOf(context, *table));
  if (!axis) return axis.error();
  if (*axis != 0) {
    return Error{fmt::format("attribute 'axis' is {}; only axis 0 (a table lookup) is supported",
                             **axisAttribute)};
  }
  return context.addNodeOp(node, ir::OpKind::kGather, {}, {*table, *indices});
}

/// Reshape: the shape is input 1 (attribute `shape` before opset 5). A 0 copies the input's dim
/// (unless allowzero = 1, which would make a zero-size tensor); one -1 is inferred by the IR.
Status mapReshape(OnnxContext& context, const onnx::NodeProto& node) {
  auto x = context.input(node, 0);
  if (!x) return x.error();
  auto shape = context.intsFromInputOrAttribute(node, 1, "shape");
  if (!shape) return shape.error();
  if (!*shape) return Error{"input 1 (shape) is missing"};
  auto allowZero = OnnxContext::intAttribute(node, "allowzero");
  if (!allowZero) return allowZero.error();
  const ir::Shape& input = context.typeOf(*x).shape;
  ir::Shape newShape = **shape;
  for (size_t dim = 0; dim < newShape.size(); ++dim) {
    if (newShape[dim] != 0) continue;
    if (allowZero->value_or(0) != 0) {
      return Error{
          fmt::format("shape[{}] is 0 with allowzero = 1; zero-size tensors are not "
                      "supported",
                      dim)};
    }
    if (dim >= input.size()) {
      return Error{fmt::format("shape[{}] is 0 (copy the input's dim) but the input {} has rank {}",
                               dim, ir::shapeToString(input), input.size())};
    }
    newShape[dim] = input[dim];
  }
  return addReshape(context, node, *x, std::move(newShape));
}

/// Flatten at `axis` (default 1, 0..rank): [d0 * ... * d(axis-1), d(axis) * ... * d(rank-1)].
Status mapFlatten(OnnxContext& context, const onnx::NodeProto& node) {
  auto x = context.input(node, 0);
  if (!x) return x.error();
  const ir::Shape& input = context.typeOf(*x).shape;
  const auto rank = static_cast<int64_t>(input.size());
  auto axisAttribute = OnnxContext::intAttribute(node, "axis");
  if (!axisAttribute) return axisAttribute.error();
  const int64_t given = axisAttribute->value_or(1);
  const int64_t axis = given < 0 ? given + rank : given;
  if (axis < 0 || axis > rank) {
    return Error{fmt::format("attribute 'axis' is {}, expected -{} to {}", given, rank, rank)};
  }
  const auto product = [](auto begin, auto end) {
    return std::accumulate(begin, end, int64_t{1}, std::multiplies<>());
  };
  return addReshape(
      context, node, *x,
      {product(input.begin(), input.begin() + axis), product(input.begin() + axis, input.end())});
}

/// Squeeze: drops the listed size-1 dims (axes from input 1 from opset 13, else the attribute),
/// or every size-1 dim when no axes (or an empty list) are given.
Status mapSqueeze(OnnxContext& context, const onnx::NodeProto& node) {
  auto x = context.input(node, 0);
  if (!x) return x.error();
  const ir::Shape& input = context.typeOf(*x).shape;
  auto axes = context.intsFromInputOrAttribute(node, 1, "axes");
  if (!axes) return axes.error();
  const bool dropEveryOne = !*axes || (*axes)->empty();
  std::vector<bool> dropped(input.size(), false);
  for (size_t dim = 0; dim < input.size(); ++dim) dropped[dim] = dropEveryOne && input[dim] == 1;
  for (int64_t axis : axes->value_or(std::vector<int64_t>{})) {
    auto dim = normalizedOnnxAxis("axes entry", axis, static_cast<int64_t>(input.size()));
    if (!dim) return dim.error();
    if (input[*dim] != 1) {
      return Error{fmt::format("axes entry {} names dim {} of size {}, expected size 1", axis, *dim,
                               input[*dim])};
    }
    dropped[*dim] = true;
  }
  ir::Shape newShape;
  for (size_t dim = 0; dim < input.size(); ++dim) {
    if (!dropped[dim]) newShape.push_back(input[dim]);
  }
  return addReshape(context, node, *x, std::move(newShape));
}

/// Unsqueeze: inserts size-1 dims at `axes` of the output (input 1 from opset 13, else the
/// attribute).
Status mapUnsqueeze(OnnxContext& context, const onnx::NodeProto& node) {
  auto x = context.input(node, 0);
  if (!x) return x.error();
  const ir::Shape& input = context.typeOf(*x).shape;
  auto axes = context.intsFromInputOrAttribute(node, 1, "axes");
  if (!axes) return axes.error();
  if (!*axes) return Error{"axes are missing"};
  const auto outputRank = static_cast<int64_t>(input.size() + (*axes)->size());
  std::vector<bool> inserted(outputRank, false);
  for (int64_t axis : **axes) {
    auto dim = normalizedOnnxAxis("axes entry", axis, outputRank);
    if (!dim) return dim.error();
    if (inserted[*dim]) return Error{fmt::format("axes list dim {} twice", *dim)};
    inserted[*dim] = true;
  }
  ir::Shape newShape;
  auto next = input.begin();
  for (int64_t dim = 0; dim < outputRank; ++dim) newShape.push_back(inserted[dim] ? 1 : *next++);
  return addReshape(context, node, *x, std::move(newShape));
}

/// Transpose by `perm` (default: reverse the dims).
Status mapTranspose(OnnxContext& context, const onnx::NodeProto& node) {
  auto x = context.input(node, 0);
  if (!x) return x.error();
  auto perm = OnnxContext::intsAttribute(node, "perm");
  if (!perm) return perm.error();
  ir::OpAttrs attrs;
  if (*perm) {
    attrs.perm = **perm;
  } else {
    attrs.perm.resize(context.typeOf(*x).shape.size());
    std::iota(attrs.perm.rbegin(), attrs.perm.rend(), 0);
  }
  return context.addNodeOp(node, ir::OpKind::kTranspose, attrs, {*x});
}

Status mapConcat(OnnxContext& context, const onnx::NodeProto& node) {
  auto axis = OnnxContext::intAttribute(node, "axis");
  if (!axis) return axis.error();
  if (!*axis) return Error{"attribute 'axis' is missing"};
  std::vector<ir::TensorId> operands;
  for (int index = 0; index < node.input_size(); ++index) {
    auto tensor = context.input(node, index);
    if (!tensor) return tensor.error();
    operands.push_back(*tensor);
  }
  ir::OpAttrs attrs;
  attrs.axis = **axis;
  return context.addNodeOp(node, ir::OpKind::kConcat, attrs, operands);
}

Status mapIdentity(OnnxContext& context, const onnx::NodeProto& node) {
  auto x = context.input(node, 0);
  if (!x) return x.error();
  return context.alias(node, *x);
}

/// Slice's constant inputs (attributes before opset 10), one entry per sliced axis.
struct SliceSpec {
  std::vector<int64_t> starts;
  std::vector<int64_t> ends;
  std::vector<int64_t> axes;
};

Expected<SliceSpec> readSliceSpec(OnnxContext& context, const onnx::NodeProto& node) {
  std::optional<std::vector<int64_t>> values[4];
  const char* names[4] = {"starts", "ends", "axes", "steps"};
  for (int index = 0; index < 4; ++index) {
    auto read = context.intsFromInputOrAttribute(node, index + 1, names[index]);
    if (!read) return read.error();
    values[index] = std::move(*read);
  }
  if (!values[0] || !values[1]) return Error{"starts and ends are required"};
  SliceSpec spec{*values[0], *values[1], {}};
  if (values[2]) {
    spec.axes = *values[2];
  } else {
    spec.axes.resize(spec.starts.size());
    std::iota(spec.axes.begin(), spec.axes.end(), 0);
  }
  if (spec.ends.size() != spec.starts.size() || spec.axes.size() != spec.starts.size()) {
    return Error{fmt::format("starts, ends and axes have {}, {} and {} entries, expected equal",
                             spec.starts.size(), spec.ends.size(), spec.axes.size())};
  }
  for (int64_t step : values[3].value_or(std::vector<int64_t>{})) {
    if (step != 1)
      return Error{
          fmt::format("steps [{}]: only steps of 1 are supported", fmt::join(*values[3], ","))};
  }
  return spec;
}

/// Slice with constant bounds; ONNX's negative and out-of-range bounds are clamped into
/// [0, dim] as the spec says, then every dim gets an explicit [start, end) for the IR.
Status mapSlice(OnnxContext& context, const onnx::NodeProto& node) {
  auto x = context.input(node, 0);
  if (!x) return x.error();
  auto spec = readSliceSpec(context, node);
  if (!spec) return spec.error();
  const ir::Shape& input = context.typeOf(*x).shape;
  ir::OpAttrs attrs;
  attrs.starts.assign(input.size(), 0);
  attrs.ends = input;
  const auto clampToDim = [](int64_t bound, int64_t size) {
    return std::clamp(bound < 0 ? bound + size : bound, int64_t{0}, size);
  };
  for (size_t entry = 0; entry < spec->axes.size(); ++entry) {
    auto dim =
        normalizedOnnxAxis("axes entry", spec->axes[entry], static_cast<int64_t>(input.size()));
    if (!dim) return dim.error();
    attrs.starts[*dim] = clampToDim(spec->starts[entry], input[*dim]);
    attrs.ends[*dim] = clampToDim(spec->ends[entry], input[*dim]);
  }
  return context.addNodeOp(node, ir::OpKind::kSlice, attrs, {*x});
}

/// The TensorProto of a Constant node's single value attribute.
Expected<onnx::TensorProto> constantValue(const onnx::AttributeProto& attribute) {
  onnx::TensorProto tensor;
  const std::string& name = attribute.name();
  if (name == "value" && attribute.type() == onnx::AttributeProto_AttributeType_TENSOR) {
    return attribute.t();
  }
  if (name == "value_float" && attribute.type() == onnx::AttributeProto_AttributeType_FLOAT) {
    tensor.set_data_type(onnx::TensorProto_DataType_FLOAT);
    tensor.add_float_data(attribute.f());
  } else if (name == "value_floats" &&
             attribute.type() == onnx::AttributeProto_AttributeType_FLOATS) {
    tensor.set_data_type(onnx::TensorProto_DataType_FLOAT);
    tensor.add_dims(attribute.floats_size());
    *tensor.mutable_float_data() = attribute.floats();
  } else if (name == "value_int" && attribute.type() == onnx::AttributeProto_AttributeType_INT) {
    tensor.set_data_type(onnx::TensorProto_DataType_INT64);
    tensor.add_int64_data(attribute.i());
  } else if (name == "value_ints" && attribute.type() == onnx::AttributeProto_AttributeType_INTS) {
    tensor.set_data_type(onnx::TensorProto_DataType_INT64);
    tensor.add_dims(attribute.ints_size());
    *tensor.mutable_int64_data() = attribute.ints();
  } else {
    return Error{fmt::format(
        "attribute '{}' of type {} is not supported (value, value_float(s) and value_int(s) are)",
        name, onnx::AttributeProto_AttributeType_Name(attribute.type()))};
  }
  return tensor;
}

/// Constant: a value for later nodes to read (as attributes, or as a tensor on first use).
Status mapConstant(OnnxContext& context, const onnx::NodeProto& node) {
  if (node.attribute_size() != 1) {
    return Error{fmt::format("expected one value attribute, got {}", node.attribute_size())};
  }
  if (node.output_size() == 0 || node.output(0).empty()) return Error{"output 0 is missing"};
  auto value = constantValue(node.attribute(0));
  if (!value) return value.error();
  auto tensor = std::make_unique<onnx::TensorProto>(std::move(*value));
  tensor->set_name(node.output(0));
  context.addOwnedConstant(node.output(0), std::move(tensor));
  return {};
}

}  // namespace

void addShapeOpMappers(std::unordered_map<std::string, OnnxOpMapper>& mappers) {
  mappers["Gather"] = mapGather;
  mappers["Reshape"] = mapReshape;
  mappers["Flatten"] = mapFlatten;
  mappers["Squeeze"] = mapSqueeze;
  mappers["Unsqueeze"] = mapUnsqueeze;
  mappers["Transpose"] = mapTranspose;
  mappers["Concat"] = mapConcat;
  mappers["Slice"] = mapSlice;
  mappers["Identity"] = mapIdentity;
  mappers["Constant"] = mapConstant;
}

}  // namespace autopar::frontend
