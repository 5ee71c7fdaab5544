/// \file
/// Fuzz target: IOPDDL solutions as solvers print them (frontend::parseIopddlSolution). Any
/// text gives a list of strategy indices or an error; a list printed back reads the same.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontend/iopddl.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autopar;
  auto solution = frontend::parseIopddlSolution(fuzz::textOf(data, size), "fuzz.txt");
  if (!fuzz::accepted(solution)) return 0;
  auto again =
      frontend::parseIopddlSolution(fmt::format("[{}]", fmt::join(*solution, ", ")), "printed.txt");
  fuzz::check(again.ok() && *again == *solution, "a printed solution reads back differently");
  return 0;
}
