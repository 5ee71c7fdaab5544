#pragma once
/// \file
/// What `autopar models` and `autopar clusters` print: the built-in model presets with their
/// dimensions, and the cluster presets with their device, memory and links.

#include <string>

#include "util/expected.h"

namespace autopar::exporters {

/// One line per model preset (name, layers, hidden, heads, kv heads, ffn, vocab, seq), or a JSON
/// array of them.
std::string formatModelPresets(bool json);

/// One line per cluster preset (devices, device, memory, each link level's bandwidth), or a JSON
/// array of them.
Expected<std::string> formatClusterPresets(bool json);

}  // namespace autopar::exporters
