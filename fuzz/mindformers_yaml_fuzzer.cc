/// \file
/// Fuzz target: MindFormers-style run yamls (frontend::parseMindFormersYaml,
/// docs/mindformers-yaml.md). Any text gives a config or an error; an accepted config goes
/// through what `autopar plan --config` derives from it on 8 devices: the device-count check,
/// then the global and per-micro-step batch sizes.

#include "frontend/mindformers_yaml.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autopar;
  auto config = frontend::parseMindFormersYaml(fuzz::textOf(data, size), "fuzz.yaml");
  if (!fuzz::accepted(config)) return 0;
  constexpr int64_t kDevices = 8;
  if (!fuzz::accepted(frontend::checkDeviceCount(*config, kDevices))) return 0;
  (void)frontend::globalBatchSizeReport(*config, kDevices);
  (void)frontend::clusterMicroBatchSize(*config, kDevices);
  return 0;
}
