#include "export/layout_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "plan/plan_json.h"
#include "planner/inputs.h"
#include "planner/plan_assembly.h"

namespace autopar::exporters {

namespace {

std::string rangesText(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<std::string> parts;
  for (const auto& [lo, hi] : ranges) parts.push_back(fmt::format("{}:{}", lo, hi));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

}  // namespace

std::string formatLayout(const rules::ShardedOp& sharded, int64_t devices, bool json) {
  std::vector<std::pair<std::string, const layout::TensorLayout*>> tensors;
  for (size_t i = 0; i < sharded.inputs.size(); ++i) {
    tensors.emplace_back(fmt::format("input {}", i), &sharded.inputs[i]);
  }
  tensors.emplace_back("output", &sharded.outputs.front());
  nlohmann::ordered_json document{{"device_matrix", sharded.matrix.shape()},
                                  {"tensor_maps", nlohmann::json::array()},
                                  {"slices", nlohmann::json::array()}};
  std::string text = fmt::format("device matrix [{}] over devices 0..{}\n",
                                 fmt::join(sharded.matrix.shape(), ","), devices - 1);
  for (size_t t = 0; t < tensors.size(); ++t) {
    const auto& [label, layout] = tensors[t];
    document["tensor_maps"].push_back(layout->tensorMap());
    text += fmt::format("{} shape [{}] tensor map [{}]{}\n", label, fmt::join(layout->shape, ","),
                        fmt::join(layout->tensorMap(), ","),
                        layout->partialAxes.empty() ? "" : " (partial sums)");
    std::map<std::vector<std::pair<int64_t, int64_t>>, std::vector<int64_t>> holders;
    for (int64_t device = 0; device < devices; ++device) {
      auto ranges = layout->sliceRanges(device);
      std::vector<std::vector<int64_t>> rangeList;
      for (const auto& [lo, hi] : ranges) rangeList.push_back({lo, hi});
      document["slices"].push_back({{"device", device}, {"tensor", t}, {"ranges", rangeList}});
      holders[ranges].push_back(device);
    }
    for (const auto& [ranges, holding] : holders) {
      text += fmt::format("  slice {} on devices {{{}}}\n", rangesText(ranges),
                          fmt::join(holding, ","));
    }
  }
  return json ? document.dump(2) + "\n" : text;
}

std::string formatRedistribution(const layout::Redistribution& plan,
                                 const layout::TensorLayout& from, const layout::TensorLayout& to,
                                 ir::DType dtype, const std::string& clusterName, bool json) {
  if (json) {
    nlohmann::ordered_json document{{"seconds", plan.seconds},
                                    {"bytes_per_device", plan.bytesPerDevice},
                                    {"steps", nlohmann::json::array()}};
    for (const auto& step : plan.steps) {
      document["steps"].push_back(plan::stepToJson(planner::stepRecord(step)));
    }
    return document.dump(2) + "\n";
  }
  std::string text = fmt::format(
      "from {}\nto   {}\nelements {} ({} bytes); device-matrix axes counted from the "
      "right, as in tensor maps\n",
      from.toString(), to.toString(), ir::dtypeName(dtype), ir::dtypeBytes(dtype));
  if (plan.empty()) text += "no communication: the layouts are the same\n";
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    text += fmt::format("  {}. {}\n", i + 1, plan.steps[i].toString());
  }
  text += fmt::format("total {}, {} sent per device on {}\n", planner::formatSeconds(plan.seconds),
                      planner::formatBytes(plan.bytesPerDevice), clusterName);
  return text;
}

}  // namespace autopar::exporters
