/// autopar-runtime: the verbs that execute plans on ranks (`run`, `check`, `profile`). They link
/// LibTorch, whose ~300 shared libraries take ~0.45 s to load, so they live in this executable and
/// `autopar` starts it for those verbs only (src/cli/main.cc); every other verb starts in
/// milliseconds. The launched ranks run this executable too (runtime/launcher.cc).

#include <c10/util/Logging.h>

#include "cli/verbs.h"

int main(int argc, char** argv) {
  using namespace autopar::cli;
  // c10d logs a failed connection or a timeout before throwing it; autopar prints the exception
  // as its one line, so LibTorch's own log keeps to fatal errors.
  FLAGS_caffe2_log_level = 3;
  c10::UpdateLoggingLevelsFromFlags();
  CLI::App app{"autopar: run plans on local ranks (LibTorch + Gloo)"};
  app.require_subcommand(1);
  Action action;
  addRunVerbs(app, action);
  addProfileVerb(app, action);
  return parseAndRun(app, action, argc, argv);
}
