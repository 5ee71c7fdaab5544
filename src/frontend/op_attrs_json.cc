#include "frontend/op_attrs_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "ir/dtype.h"
#include "ir/op_kind.h"
#include "util/json_fields.h"

namespace autopar::frontend {

using autopar::json::checkObject;
using autopar::json::childPath;
using autopar::json::indexPath;
using autopar::json::jsonTypeName;
using autopar::json::readBool;
using autopar::json::readInt;
using autopar::json::readIntList;
using autopar::json::readNumber;
using autopar::json::readPositiveInt;
using autopar::json::readPositiveIntList;
using autopar::json::readString;
using autopar::json::requireField;

using nlohmann::json;

namespace {

/// How one attribute key is read from and written to JSON.
struct AttrCodec {
  std::string_view key;
  Status (*read)(const json& value, const std::string& path, ir::OpAttrs& attrs);
  json (*write)(const ir::OpAttrs& attrs);
  bool (*isDefault)(const ir::OpAttrs& attrs);
};

template <auto Field>
json writeField(const ir::OpAttrs& attrs) {
  return json(attrs.*Field);
}

template <auto Field>
bool isDefaultField(const ir::OpAttrs& attrs) {
  static const ir::OpAttrs kDefaults{};
  return attrs.*Field == kDefaults.*Field;
}

/// Reads with `reader` and stores into `Field`.
template <auto Field, auto Reader>
Status readField(const json& value, const std::string& path, ir::OpAttrs& attrs) {
  auto parsed = Reader(value, path);
  if (!parsed) return parsed.error();
  attrs.*Field = std::move(*parsed);
  return {};
}

Status readCastTo(const json& value, const std::string& path, ir::OpAttrs& attrs) {
  auto name = readString(value, path);
  if (!name) return name.error();
  auto dtype = ir::parseDType(*name);
  if (!dtype) return dtype.error().in(path);
  attrs.castTo = *dtype;
  return {};
}

json writeCastTo(const ir::OpAttrs& attrs) { return std::string(ir::dtypeName(attrs.castTo)); }

Status readDropoutRate(const json& value, const std::string& path, ir::OpAttrs& attrs) {
  auto rate = readNumber(value, path);
  if (!rate) return rate.error();
  if (*rate < 0.0 || *rate >= 1.0) {
    return Error{fmt::format("{}: expected a rate in [0, 1), got {}", path, value.dump())};
  }
  attrs.dropoutRate = *rate;
  return {};
}

Status readEpsilon(const json& value, const std::string& path, ir::OpAttrs& attrs) {
  auto epsilon = readNumber(value, path);
  if (!epsilon) return epsilon.error();
  if (*epsilon <= 0.0) {
    return Error{fmt::format("{}: expected a positive number, got {}", path, value.dump())};
  }
  attrs.epsilon = *epsilon;
  return {};
}

/// Opaque's output types: [{"shape": [8, 5], "dtype": "fp32"}, ...]; dtype defaults to fp32, as
/// for graph tensors.
Status readOutputTypes(const json& value, const std::string& path, ir::OpAttrs& attrs) {
  if (!value.is_array()) {
    return Error{fmt::format("{}: expected an array, got {}", path, jsonTypeName(value))};
  }
  std::vector<ir::TensorType> types;
  for (size_t index = 0; index < value.size(); ++index) {
    const std::string typePath = indexPath(path, index);
    if (auto status = checkObject(value[index], typePath, {"shape", "dtype"}); !status) {
      return status;
    }
    auto shapeField = requireField(value[index], typePath, "shape");
    if (!shapeField) return shapeField.error();
    auto shape = readPositiveIntList(**shapeField, childPath(typePath, "shape"));
    if (!shape) return shape.error();
    ir::TensorType type{std::move(*shape), ir::DType::kF32};
    if (auto it = value[index].find("dtype"); it != value[index].end()) {
      const std::string dtypePath = childPath(typePath, "dtype");
      auto name = readString(*it, dtypePath);
      if (!name) return name.error();
      auto dtype = ir::parseDType(*name);
      if (!dtype) return dtype.error().in(dtypePath);
      type.dtype = *dtype;
    }
    types.push_back(std::move(type));
  }
  attrs.outputTypes = std::move(types);
  return {};
}

json writeOutputTypes(const ir::OpAttrs& attrs) {
  json types = json::array();
  for (const ir::TensorType& type : attrs.outputTypes) {
    types.push_back({{"shape", type.shape}, {"dtype", std::string(ir::dtypeName(type.dtype))}});
  }
  return types;
}

using A = ir::OpAttrs;

template <auto Field, auto Reader>
constexpr AttrCodec codec(std::string_view key) {
  return AttrCodec{key, readField<Field, Reader>, writeField<Field>, isDefaultField<Field>};
}

const std::array<AttrCodec, 23>& allCodecs() {
  static const std::array<AttrCodec, 23> kCodecs = {
      codec<&A::transposeA, readBool>("transpose_a"),
      codec<&A::transposeB, readBool>("transpose_b"),
      codec<&A::axes, readIntList>("axes"),
      codec<&A::keepDims, readBool>("keep_dims"),
      codec<&A::perm, readIntList>("perm"),
      codec<&A::newShape, readIntList>("new_shape"),
      codec<&A::axis, readInt>("axis"),
      codec<&A::starts, readIntList>("starts"),
      codec<&A::ends, readIntList>("ends"),
      codec<&A::numHeads, readPositiveInt>("num_heads"),
      codec<&A::numKvHeads, readPositiveInt>("num_kv_heads"),
      codec<&A::causal, readBool>("causal"),
      codec<&A::scoresInMemory, readBool>("scores_in_memory"),
      codec<&A::cudnnKernel, readBool>("cudnn_kernel"),
      codec<&A::flash1Kernel, readBool>("flash1_kernel"),
      codec<&A::fp8, readBool>("fp8"),
      AttrCodec{"cast_to", readCastTo, writeCastTo, isDefaultField<&A::castTo>},
      AttrCodec{"dropout_rate", readDropoutRate, writeField<&A::dropoutRate>,
                isDefaultField<&A::dropoutRate>},
      AttrCodec{"epsilon", readEpsilon, writeField<&A::epsilon>, isDefaultField<&A::epsilon>},
      codec<&A::manualSplit, readPositiveIntList>("manual_split"),
      codec<&A::topK, readPositiveInt>("top_k"),
      codec<&A::opaqueType, readString>("op_type"),
      AttrCodec{"output_types", readOutputTypes, writeOutputTypes, isDefaultField<&A::outputTypes>},
  };
  return kCodecs;
}

const AttrCodec* findCodec(std::string_view key) {
  const auto& codecs = allCodecs();
  auto it = std::find_if(codecs.begin(), codecs.end(),
                         [&](const AttrCodec& candidate) { return candidate.key == key; });
  return it == codecs.end() ? nullptr : &*it;
}

Error unknownAttr(ir::OpKind kind, std::string_view key, const std::string& path) {
  const auto keys = attrKeysOf(kind);
  const auto kindName = ir::opKindName(kind);
  const std::string accepted = keys.empty()
                                   ? fmt::format("{} takes no attributes", kindName)
                                   : fmt::format("{} takes {}", kindName, fmt::join(keys, ", "));
  if (findCodec(key) != nullptr) {
    return Error{
        fmt::format("{}: {} does not take attribute '{}' ({})", path, kindName, key, accepted)};
  }
  return Error{fmt::format("{}: unknown attribute '{}' ({})", path, key, accepted)};
}

}  // namespace

std::vector<std::string_view> attrKeysOf(ir::OpKind kind) {
  using K = ir::OpKind;
  switch (kind) {
    case K::kMatMul:
    case K::kBatchMatMul:
      return {"transpose_a", "transpose_b"};
    case K::kReduceSum:
    case K::kReduceMean:
    case K::kReduceMax:
      return {"axes", "keep_dims"};
    case K::kTranspose:
      return {"perm"};
    case K::kReshape:
      return {"new_shape"};
    case K::kSoftmax:
    case K::kConcat:
      return {"axis"};
    case K::kSlice:
      return {"starts", "ends"};
    case K::kFlashAttention:
      return {"num_heads", "num_kv_heads", "causal", "scores_in_memory"};
    case K::kRotary:
      return {"num_heads"};
    case K::kCast:
      return {"cast_to"};
    case K::kDropout:
      return {"dropout_rate"};
    case K::kLayerNorm:
    case K::kRMSNorm:
      return {"epsilon"};
    case K::kGather:
      return {"manual_split"};
    case K::kMoEDispatch:
    case K::kMoECombine:
      return {"top_k"};
    case K::kOpaque:
      return {"op_type", "output_types"};
    default:
      return {};
  }
}

Expected<ir::OpAttrs> attrsFromJson(ir::OpKind kind, const json& attrs, const std::string& path) {
  if (!attrs.is_object()) {
    return Error{fmt::format("{}: expected an object, got {}", path, jsonTypeName(attrs))};
  }
  const auto keys = attrKeysOf(kind);
  ir::OpAttrs result;
  for (const auto& item : attrs.items()) {
    const AttrCodec* attrCodec = findCodec(item.key());
    if (attrCodec == nullptr || std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
      return unknownAttr(kind, item.key(), path);
    }
    auto status = attrCodec->read(item.value(), childPath(path, item.key()), result);
    if (!status) return status.error();
  }
  return result;
}

json attrsToJson(ir::OpKind kind, const ir::OpAttrs& attrs) {
  json result = json::object();
  for (std::string_view key : attrKeysOf(kind)) {
    const AttrCodec* attrCodec = findCodec(key);
    if (!attrCodec->isDefault(attrs)) result[std::string(key)] = attrCodec->write(attrs);
  }
  return result;
}

}  // namespace autopar::frontend
