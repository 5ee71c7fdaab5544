#include "cli/layout_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ir/op_kind.h"
#include "util/limits.h"

namespace autopar::cli {

namespace {

Expected<nlohmann::json> parseJsonList(const std::string& text, const std::string& option) {
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_array()) {
    return Error{fmt::format("{} '{}': expected a list such as [2,4]", option, text)};
  }
  return parsed;
}

}  // namespace

Expected<ir::Shape> parseShapeList(const std::string& text, const std::string& option) {
  auto list = parseJsonList(text, option);
  if (!list) return list.error();
  ir::Shape shape;
  for (const auto& dim : *list) {
    if (!dim.is_number_integer() || dim.get<int64_t>() < 1) {
      return Error{fmt::format("{} '{}': expected positive integers", option, text)};
    }
    shape.push_back(dim.get<int64_t>());
  }
  return shape;
}

/// "[64,32],[32,128]" -> {{64,32},{32,128}}.
Expected<std::vector<ir::Shape>> parseShapes(const std::string& text) {
  auto parsed = nlohmann::json::parse("[" + text + "]", nullptr, false);
  if (parsed.is_discarded()) {
    return Error{fmt::format("--shapes '{}': expected shapes like [64,32],[32,128]", text)};
  }
  std::vector<ir::Shape> shapes;
  for (const auto& item : parsed) {
    if (!item.is_array())
      return Error{fmt::format("--shapes '{}': expected a list of shapes", text)};
    ir::Shape shape;
    for (const auto& dim : item) {
      if (!dim.is_number_integer() || dim.get<int64_t>() <= 0) {
        return Error{fmt::format("--shapes '{}': dims must be positive integers", text)};
      }
      shape.push_back(dim.get<int64_t>());
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

Expected<layout::TensorLayout> parseLayoutText(const LayoutText& text, const ir::Shape& shape,
                                               const std::string& side) {
  auto matrix = parseJsonList(text.matrix, "--" + side + "-matrix");
  if (!matrix) return matrix.error();
  auto map = parseJsonList(text.map, "--" + side + "-map");
  if (!map) return map.error();
  std::vector<int64_t> dims;
  int64_t devices = 1;
  for (const auto& dim : *matrix) {
    if (!dim.is_number_integer() || dim.get<int64_t>() < 1) {
      return Error{fmt::format("--{}-matrix '{}': expected positive integers", side, text.matrix)};
    }
    dims.push_back(dim.get<int64_t>());
    // Checked dim by dim, so the product cannot overflow before it is compared.
    if (dim.get<int64_t>() > limits::kMaxDevices / devices) {
      return Error{fmt::format("--{}-matrix '{}': holds more than {} devices (docs/limits.md)",
                               side, text.matrix, limits::kMaxDevices)};
    }
    devices *= dim.get<int64_t>();
  }
  const int numAxes = static_cast<int>(dims.size());
  auto toAxis = [&](const nlohmann::json& entry) -> Expected<int> {
    if (!entry.is_number_integer() || entry.get<int>() < 0 || entry.get<int>() >= numAxes) {
      return Error{fmt::format("--{}-map '{}': axis {} is not in 0..{} (counted from the right)",
                               side, text.map, entry.dump(), numAxes - 1)};
    }
    return numAxes - 1 - entry.get<int>();
  };
  layout::TensorLayout result{layout::DeviceMatrix(dims), {}, {}, shape};
  for (const auto& entry : *map) {
    std::vector<int> axes;
    const auto list = entry.is_array() ? entry : nlohmann::json::array({entry});
    for (const auto& item : list) {
      if (item.is_number_integer() && item.get<int>() == -1) continue;
      auto axis = toAxis(item);
      if (!axis) return axis.error();
      axes.push_back(*axis);
    }
    result.dimAxes.push_back(std::move(axes));
  }
  if (!text.partial.empty()) {
    auto partial = parseJsonList(text.partial, "--" + side + "-partial");
    if (!partial) return partial.error();
    for (const auto& item : *partial) {
      auto axis = toAxis(item);
      if (!axis) return axis.error().in("--" + side + "-partial");
      result.partialAxes.push_back(*axis);
    }
    std::sort(result.partialAxes.begin(), result.partialAxes.end());
  }
  if (auto status = result.validate(); !status) return status.error().in("--" + side);
  return result;
}

/// A one-op graph of `kind` over fresh input tensors in0, in1, ... of the given shapes.
Expected<ir::Graph> singleOpGraph(const std::string& kindName,
                                  const std::vector<ir::Shape>& shapes) {
  auto kind = ir::parseOpKind(kindName);
  if (!kind) return kind.error().in("--op");
  ir::Graph graph("layout");
  std::vector<ir::TensorId> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto id = graph.addTensor(fmt::format("in{}", i), {shapes[i], ir::DType::kF32},
                              ir::TensorRole::kInput);
    if (!id) return id.error();
    inputs.push_back(*id);
  }
  auto op = graph.addOp("op", *kind, {}, inputs, {"out"});
  if (!op) return op.error().in("--shapes");
  return graph;
}

}  // namespace autopar::cli
