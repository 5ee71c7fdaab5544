#pragma once
/// \file
/// What `autopar models`, `autopar clusters` and `autopar frameworks` print: the built-in model
/// presets with their dimensions, the cluster presets with their device, memory and links, and
/// the framework profiles with their code paths.

#include <string>

#include "util/expected.h"

namespace autopar::exporters {

/// One line per model preset (name, layers, hidden, heads, kv heads, ffn, vocab, seq), or a JSON
/// array of them.
std::string formatModelPresets(bool json);

/// One line per cluster preset (devices, device, memory, each link level's bandwidth), or a JSON
/// array of them.
Expected<std::string> formatClusterPresets(bool json);

/// One line per framework profile (name, what it stands for). With `markdown`, the tables of
/// docs/frameworks.md instead: every code-path switch (flag, yaml key, what it does), and every
/// profile's attention kernel and switches, all from cost/framework.h's one declaration.
std::string formatFrameworks(bool markdown);

}  // namespace autopar::exporters
