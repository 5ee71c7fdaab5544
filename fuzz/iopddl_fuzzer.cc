/// \file
/// Fuzz target: IOPDDL problem files (frontend::parseIopddl). Any text gives a problem that
/// passes ir::validateProblem, or an error; an accepted problem evaluates its first strategies
/// (what `autopar iopddl --solution` does with a solver's answer).

#include <vector>

#include "frontend/iopddl.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autopar;
  auto problem = frontend::parseIopddl(fuzz::textOf(data, size), "fuzz.json");
  if (!fuzz::accepted(problem)) return 0;
  auto status = ir::validateProblem(*problem);
  fuzz::checkOk(status, "an accepted problem fails validation");
  const std::vector<int> firstStrategies(problem->nodes.size(), 0);
  auto evaluation = ir::evaluateSolution(*problem, firstStrategies);
  fuzz::checkOk(evaluation, "an accepted problem cannot evaluate its first strategies");
  return 0;
}
