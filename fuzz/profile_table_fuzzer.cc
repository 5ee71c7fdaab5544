/// \file
/// Fuzz target: measured block tables (planner::parseProfileTable, docs/profile-table.md), as
/// `--profile-table` reads them for a cluster of "CPU-rank" devices. Any text gives a table or
/// an error; an accepted table written by profileTableToJson reads back to the same file.

#include "fuzz_check.h"
#include "planner/configuration/profile_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autopar;
  const std::string device = "CPU-rank";
  auto table = planner::parseProfileTable(fuzz::textOf(data, size), "fuzz.json", device);
  if (!fuzz::accepted(table)) return 0;
  const std::string written = planner::profileTableToJson(*table, "fuzz");
  auto again = planner::parseProfileTable(written, "written.json", device);
  fuzz::checkOk(again, "an accepted table's own file does not read back");
  fuzz::check(planner::profileTableToJson(*again, "fuzz") == written,
              "an accepted table's own file reads back to another table");
  return 0;
}
