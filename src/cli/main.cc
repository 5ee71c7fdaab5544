/// The `autopar` command: parses the verb and its options, then runs the verb's action. The verbs
/// that run plans on ranks are autopar-runtime's, started here with the same arguments.

#include <fmt/format.h>

#include "cli/verbs.h"
#include "plan/plan.h"

int main(int argc, char** argv) {
  using namespace autopar::cli;
  if (argc > 1 && isRuntimeVerb(argv[1])) return execRuntime(argv);
  CLI::App app{"autopar: find the fastest parallel plan that fits, and predict its step time"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("autopar {} (plan format {})", AUTOPAR_VERSION,
                                                autopar::plan::kPlanFormatVersion));
  Action action;
  addPlanVerb(app, action);
  addLayoutVerb(app, action);
  addRedistributeVerb(app, action);
  addListVerbs(app, action);
  addValidateVerb(app, action);
  addIopddlVerb(app, action);
  addEstimateVerb(app, action);
  addSearchVerb(app, action);
  addRuntimeVerbs(app, action, argv);
  return parseAndRun(app, action, argc, argv);
}
