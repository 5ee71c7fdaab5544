/// \file
/// Fuzz target: graph JSON (frontend::parseGraphJson, docs/graph-format.md). Any text gives a
/// graph or an error; an accepted graph's own dump reads back to the same dump.

#include <nlohmann/json.hpp>

#include "frontend/graph_json.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autopar;
  auto graph = frontend::parseGraphJson(fuzz::textOf(data, size), "fuzz.json");
  if (!fuzz::accepted(graph)) return 0;
  const std::string dump = frontend::dumpGraphJson(frontend::graphToJson(*graph));
  auto again = frontend::parseGraphJson(dump, "dump.json");
  fuzz::checkOk(again, "an accepted graph's dump does not read back");
  fuzz::check(frontend::dumpGraphJson(frontend::graphToJson(*again)) == dump,
              "an accepted graph's dump reads back to another graph");
  return 0;
}
