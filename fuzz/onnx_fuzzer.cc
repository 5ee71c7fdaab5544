/// \file
/// Fuzz target: the ONNX importer (frontend::parseOnnx) over serialised ModelProto bytes, with
/// dynamic dims given a size as the CLI's batch option gives them. Any bytes give a graph or an
/// error; an imported graph is a valid graph file: its graph JSON dump reads back.

#include <nlohmann/json.hpp>

#include "frontend/graph_json.h"
#include "frontend/onnx_import.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autopar;
  frontend::OnnxImportOptions options;
  options.dynamicDimValue = 4;
  options.onWarning = [](const std::string&) {};  // an Opaque op's warning is not a finding
  auto graph = frontend::parseOnnx(fuzz::textOf(data, size), "fuzz.onnx", options);
  if (!fuzz::accepted(graph)) return 0;
  const std::string dump = frontend::dumpGraphJson(frontend::graphToJson(*graph));
  auto again = frontend::parseGraphJson(dump, "dump.json");
  fuzz::checkOk(again, "an imported graph's graph JSON does not read back");
  return 0;
}
