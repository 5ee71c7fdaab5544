/// \file
/// Fuzz target: cluster spec yamls (cluster::parseClusterYaml, docs/cluster-format.md). Any
/// text gives a cluster or an error; an accepted cluster has devices, and levels from the
/// innermost out whose domains nest and whose last spans every device.

#include "cluster/cluster.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace autopar;
  auto cluster = cluster::parseClusterYaml(fuzz::textOf(data, size), "fuzz.yaml");
  if (!fuzz::accepted(cluster)) return 0;
  fuzz::check(cluster->numDevices >= 1, "an accepted cluster has no devices");
  fuzz::check(!cluster->levels.empty(), "an accepted cluster has no link levels");
  int previous = 1;
  for (const auto& level : cluster->levels) {
    fuzz::check(level.domainSize >= previous && level.domainSize % previous == 0,
                "an accepted cluster's link domains do not nest");
    previous = level.domainSize;
  }
  fuzz::check(previous == cluster->numDevices,
              "an accepted cluster's outermost level does not span every device");
  return 0;
}
