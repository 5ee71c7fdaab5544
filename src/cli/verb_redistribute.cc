/// `autopar redistribute`: the primitives that move a tensor between two layouts, and their cost.

#include <fmt/format.h>

#include "cli/layout_inputs.h"
#include "cli/verbs.h"
#include "export/layout_report.h"
#include "ir/dtype.h"
#include "layout/redistribution.h"
#include "planner/inputs.h"
#include "util/limits.h"

namespace autopar::cli {

namespace {

struct RedistributeOptions {
  std::string shape;
  LayoutText from;
  LayoutText to;
  int devices = 0;
  std::string cluster = "dgx-a100-80g";
  int nodes = 1;
  std::string dtype = "bf16";
  bool enableAllToAll = false;
  bool json = false;
};

int runRedistribute(const RedistributeOptions& options) {
  auto shape = parseShapeList(options.shape, "--shape");
  if (!shape) return reportError(shape.error());
  auto from = parseLayoutText(options.from, *shape, "from");
  if (!from) return reportError(from.error());
  auto to = parseLayoutText(options.to, *shape, "to");
  if (!to) return reportError(to.error());
  const int64_t numDevices = from->deviceMatrix.numDevices();
  if (options.devices > 0 && options.devices != numDevices) {
    return reportError(Error{fmt::format("--devices {}: the source device matrix holds {} devices",
                                         options.devices, numDevices)});
  }
  auto dtype = ir::parseDType(options.dtype);
  if (!dtype) return reportError(dtype.error().in("--dtype"));
  auto cluster = planner::loadCluster(options.cluster, options.nodes, static_cast<int>(numDevices));
  if (!cluster) return reportError(cluster.error());
  layout::RedistributionOptions redistributionOptions{options.enableAllToAll};
  auto plan =
      layout::redistribute(*from, *to, *cluster, ir::dtypeBytes(*dtype), redistributionOptions);
  if (!plan) return reportError(plan.error());
  fmt::print(
      verbOut(), "{}",
      exporters::formatRedistribution(*plan, *from, *to, *dtype, cluster->name, options.json));
  return kExitOk;
}

}  // namespace

void addRedistributeVerb(CLI::App& app, Action& action) {
  auto options = std::make_shared<RedistributeOptions>();
  CLI::App* verb = app.add_subcommand(
      "redistribute",
      "Plan the primitives that turn one layout of a tensor into another, with their cost. "
      "Maps and partial axes count device-matrix axes from the right, as the seeds' tensor maps "
      "do");
  verb->add_option("--shape", options->shape, "tensor shape, e.g. [64,32]")->required();
  verb->add_option("--from-matrix", options->from.matrix, "source device matrix, e.g. [2,4]")
      ->required();
  verb->add_option("--from-map", options->from.map, "source tensor map, e.g. [1,-1]")->required();
  verb->add_option("--from-partial", options->from.partial, "axes holding partial sums, e.g. [0]");
  verb->add_option("--to-matrix", options->to.matrix, "target device matrix")->required();
  verb->add_option("--to-map", options->to.map, "target tensor map")->required();
  verb->add_option("--to-partial", options->to.partial, "target partial axes");
  verb->add_option("--devices", options->devices, "device count (checked against the matrices)")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--cluster", options->cluster, "cluster preset or yaml")->capture_default_str();
  verb->add_option("--nodes", options->nodes, "nodes of a preset")
      ->check(positiveAtMost(limits::kMaxDevices));
  verb->add_option("--dtype", options->dtype, "element type")->capture_default_str();
  verb->add_flag("--alltoall", options->enableAllToAll, "allow all-to-all");
  verb->add_flag("--json", options->json, "print JSON");
  verb->callback([&action, options] { action = [options] { return runRedistribute(*options); }; });
}

}  // namespace autopar::cli
