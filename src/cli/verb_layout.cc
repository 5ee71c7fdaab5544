/// `autopar layout`: the device matrix, tensor maps and slices a strategy gives an op (seed 002).

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cli/verbs.h"
#include "layout/strategy.h"
#include "planner/layout_inputs.h"
#include "rules/sharded_op.h"
#include "rules/sharding_rule.h"

namespace autopar::cli {

namespace {

struct LayoutOptions {
  std::string strategy;
  std::string shapes;
  std::string op = "MatMul";
  int devices = 0;
  bool json = false;
};

std::string rangesText(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<std::string> parts;
  for (const auto& [lo, hi] : ranges) parts.push_back(fmt::format("{}:{}", lo, hi));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

int runLayout(const LayoutOptions& options) {
  auto strategy = layout::parseStrategy(options.strategy);
  if (!strategy) return reportError(strategy.error().in("--strategy"));
  auto shapes = planner::parseShapes(options.shapes);
  if (!shapes) return reportError(shapes.error());
  auto graph = planner::singleOpGraph(options.op, *shapes);
  if (!graph) return reportError(graph.error());
  const ir::Op& op = graph->op(0);
  auto rule = rules::shardingRuleFor(*graph, op);
  if (!rule) return reportError(rule.error());
  auto cuts = rules::factorCutsFromStrategy(*rule, *strategy);
  if (!cuts) return reportError(cuts.error().in("--strategy"));
  int64_t used = 1;
  for (int64_t cut : *cuts) used *= cut;
  const int64_t numDevices = options.devices > 0 ? options.devices : used;
  std::vector<int> ranks(static_cast<size_t>(numDevices));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto sharded = rules::applyFactorCuts(*rule, *cuts, ranks);
  if (!sharded) return reportError(sharded.error().in("--devices"));

  std::vector<std::pair<std::string, const layout::TensorLayout*>> tensors;
  for (size_t i = 0; i < sharded->inputs.size(); ++i) {
    tensors.emplace_back(fmt::format("input {}", i), &sharded->inputs[i]);
  }
  tensors.emplace_back("output", &sharded->outputs.front());

  nlohmann::ordered_json json{{"device_matrix", sharded->matrix.shape()},
                              {"tensor_maps", nlohmann::json::array()},
                              {"slices", nlohmann::json::array()}};
  std::string text = fmt::format("device matrix [{}] over devices 0..{}\n",
                                 fmt::join(sharded->matrix.shape(), ","), numDevices - 1);
  for (size_t t = 0; t < tensors.size(); ++t) {
    const auto& [label, tensorLayout] = tensors[t];
    json["tensor_maps"].push_back(tensorLayout->tensorMap());
    text +=
        fmt::format("{} shape [{}] tensor map [{}]{}\n", label, fmt::join(tensorLayout->shape, ","),
                    fmt::join(tensorLayout->tensorMap(), ","),
                    tensorLayout->partialAxes.empty() ? "" : " (partial sums)");
    std::map<std::vector<std::pair<int64_t, int64_t>>, std::vector<int64_t>> holders;
    for (int64_t device = 0; device < numDevices; ++device) {
      auto ranges = tensorLayout->sliceRanges(device);
      std::vector<std::vector<int64_t>> rangeList;
      for (const auto& [lo, hi] : ranges) rangeList.push_back({lo, hi});
      json["slices"].push_back({{"device", device}, {"tensor", t}, {"ranges", rangeList}});
      holders[ranges].push_back(device);
    }
    for (const auto& [ranges, devices] : holders) {
      text += fmt::format("  slice {} on devices {{{}}}\n", rangesText(ranges),
                          fmt::join(devices, ","));
    }
  }
  fmt::print("{}", options.json ? json.dump(2) + "\n" : text);
  return kExitOk;
}

}  // namespace

void addLayoutVerb(CLI::App& app, Action& action) {
  auto options = std::make_shared<LayoutOptions>();
  CLI::App* verb = app.add_subcommand(
      "layout", "Show the device matrix, tensor maps and per-device slices of a strategy");
  verb->add_option("--strategy", options->strategy, "e.g. \"((2,1),(1,4))\"")->required();
  verb->add_option("--shapes", options->shapes, "input shapes, e.g. \"[64,32],[32,128]\"")
      ->required();
  verb->add_option("--op", options->op, "op kind the strategy applies to")->capture_default_str();
  verb->add_option("--devices", options->devices,
                   "devices the op runs on (default: the strategy's product)")
      ->check(positive());
  verb->add_flag("--json", options->json, "print JSON");
  verb->callback([&action, options] { action = [options] { return runLayout(*options); }; });
}

}  // namespace autopar::cli
