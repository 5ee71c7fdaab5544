/// \file
/// Fuzz target: model configuration JSON, a Hugging Face config.json or a dimensions object
/// (frontend::modelConfigFromJson, as `--model file.json` reads it). Any text gives a validated
/// transformer or an error; an accepted one counts its parameters (what estimate prints).

#include <nlohmann/json.hpp>

#include "frontend/model_config.h"
#include "fuzz_check.h"
#include "util/json_fields.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autopar;
  auto document = json::parseJsonText(fuzz::textOf(data, size));
  if (!fuzz::accepted(document)) return 0;
  auto config = frontend::modelConfigFromJson(*document);
  if (!fuzz::accepted(config)) return 0;
  fuzz::check(frontend::transformerParameterCount(*config) > 0,
              "an accepted model has no parameters");
  return 0;
}
