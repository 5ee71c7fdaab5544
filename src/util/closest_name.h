#pragma once
/// \file
/// The known name nearest a mistyped one, for "unknown key; did you mean ...?" messages:
///   closestName("devices_per_nod", {"name", "nodes", "devices_per_node"}) -> "devices_per_node"

#include <cstddef>
#include <string_view>
#include <vector>

namespace autopar {

/// Levenshtein distance (insertions, deletions, substitutions). None of the libraries autopar
/// builds with offers one, and the names compared are short.
size_t editDistance(std::string_view a, std::string_view b);

/// The entry of `known` (not empty) at the smallest edit distance from `name`; the first on ties.
std::string_view closestName(std::string_view name, const std::vector<std::string_view>& known);

}  // namespace autopar
