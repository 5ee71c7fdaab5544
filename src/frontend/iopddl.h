#pragma once
/// \file
/// The ASPLOS 2025 / EuroSys 2025 IOPDDL contest's problem files (plain JSON or gzip), as
/// ir::IntraOpProblem. The format (shared/data/iopddl/example.json):
///   {"problem": {"name": ..., "nodes": {"intervals": [[30, 70], ...], "costs": [[15], ...],
///    "usages": [[10], ...]}, "edges": {"nodes": [[0, 1], ...], "costs": [[30, 40], ...]},
///    "usage_limit": 50}}
/// Errors name the file and the field: "A.json: problem.nodes.costs[3]: expected an array of
/// integers".

#include <string>
#include <vector>

#include "ir/intra_op_problem.h"
#include "util/expected.h"

namespace autopar::frontend {

/// Reads `path`, gzip-compressed or not.
Expected<ir::IntraOpProblem> readIopddl(const std::string& path);

/// Parses problem JSON text; `sourceName` prefixes errors.
Expected<ir::IntraOpProblem> parseIopddl(const std::string& text, const std::string& sourceName);

/// Reads a solution as the contest prints it: "[s0, s1, ...]" (the last non-empty line of the
/// text counts, so a solver's whole output can be given).
Expected<std::vector<int>> parseIopddlSolution(const std::string& text,
                                               const std::string& sourceName);

/// Reads a solution file (gzip-compressed or not) as parseIopddlSolution reads its text.
Expected<std::vector<int>> readIopddlSolution(const std::string& path);

}  // namespace autopar::frontend
