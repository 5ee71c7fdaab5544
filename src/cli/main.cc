/// The `autopar` command: parses the verb and its options, then runs the verb's action. The verbs
/// that run plans on ranks are autopar-runtime's, started here with the same arguments.

#include <fmt/format.h>

#ifdef AUTOPAR_MIMALLOC
#include <mimalloc.h>
#endif

#include "cli/verbs.h"
#include "plan/plan.h"

namespace {

/// How long mimalloc keeps freed pages committed before returning them to the system. Its default
/// (25 ms in 2.0) returns them between two full-model evaluations of a search, which then fault
/// them back in: at 800 layers a third of the search went to page faults (116,000 against 33,000
/// with the delay, BENCHMARKS.md). A planning command is short-lived and its peak is what it
/// holds anyway, so the pages stay for 10 s; a long ILP or profile still gives them back.
void keepFreedPagesCommitted() {
#ifdef AUTOPAR_MIMALLOC
  mi_option_set_default(mi_option_decommit_delay, 10'000);  // MIMALLOC_DECOMMIT_DELAY still wins
#endif
}

}  // namespace

int main(int argc, char** argv) {
  using namespace autopar::cli;
  keepFreedPagesCommitted();
  if (argc > 1 && isRuntimeVerb(argv[1])) return execRuntime(argv);
  CLI::App app{"autopar: find the fastest parallel plan that fits, and predict its step time"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("autopar {} (plan format {})", AUTOPAR_VERSION,
                                                autopar::plan::kPlanFormatVersion));
  Action action;
  addPlannerVerbs(app, action);
  addRuntimeVerbs(app, action, argv);
  return parseAndRun(app, action, argc, argv);
}
