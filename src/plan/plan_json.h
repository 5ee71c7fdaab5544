#pragma once
/// \file
/// Plan <-> JSON. The writer's output is deterministic (fixed key order, fixed float formatting),
/// so the same plan gives byte-identical files.

#include <nlohmann/json.hpp>
#include <string>

#include "plan/plan.h"
#include "util/expected.h"

namespace autopar::plan {

nlohmann::ordered_json planToJson(const Plan& plan);

/// One redistribution step as the plan file writes it.
nlohmann::ordered_json stepToJson(const StepRecord& step);

/// Reads a plan; errors name the source and the JSON path, e.g.
/// "p.json: ops[2].strategy: expected a list of lists of positive integers".
Expected<Plan> planFromJson(const nlohmann::json& json, const std::string& sourceName);
/// Parses plan JSON text; `sourceName` prefixes every error ("p.json: not valid JSON").
Expected<Plan> parsePlanJson(const std::string& text, const std::string& sourceName);
/// Reads and parses a plan file; errors are prefixed with `path` as given.
Expected<Plan> readPlanFile(const std::string& path);

/// 64-bit FNV-1a of `text` as 16 hex digits (a reproducibility fingerprint, not a security hash).
std::string fingerprint(const std::string& text);

}  // namespace autopar::plan
