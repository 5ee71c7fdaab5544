/// \file
/// Fuzz target: plan JSON (plan::parsePlanJson, docs/plan-format.md). Any text gives a plan or
/// an error; an accepted plan written by planToJson reads back to the same file.

#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "plan/plan_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autopar;
  auto plan = plan::parsePlanJson(fuzz::textOf(data, size), "fuzz.json");
  if (!fuzz::accepted(plan)) return 0;
  const std::string written = plan::planToJson(*plan).dump();
  auto again = plan::parsePlanJson(written, "written.json");
  fuzz::checkOk(again, "an accepted plan's own file does not read back");
  fuzz::check(plan::planToJson(*again).dump() == written,
              "an accepted plan's own file reads back to another plan");
  return 0;
}
