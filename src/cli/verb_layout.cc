/// `autopar layout`: the device matrix, tensor maps and slices a strategy gives an op (seed 002).

#include <fmt/format.h>

#include <numeric>

#include "cli/layout_inputs.h"
#include "cli/verbs.h"
#include "export/layout_report.h"
#include "layout/strategy.h"
#include "rules/sharded_op.h"
#include "rules/sharding_rule.h"
#include "util/limits.h"

namespace autopar::cli {

namespace {

struct LayoutOptions {
  std::string strategy;
  std::string shapes;
  std::string op = "MatMul";
  int devices = 0;
  bool json = false;
};

int runLayout(const LayoutOptions& options) {
  auto strategy = layout::parseStrategy(options.strategy);
  if (!strategy) return reportError(strategy.error().in("--strategy"));
  auto shapes = parseShapes(options.shapes);
  if (!shapes) return reportError(shapes.error());
  auto graph = singleOpGraph(options.op, *shapes);
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

  fmt::print(verbOut(), "{}", exporters::formatLayout(*sharded, numDevices, options.json));
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
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_flag("--json", options->json, "print JSON");
  verb->callback([&action, options] { action = [options] { return runLayout(*options); }; });
}

}  // namespace autopar::cli
