#pragma once
/// \file
/// Typed access to the fields of a parsed JSON document, with errors that name the JSON path of
/// the offending field. Every reader of JSON (graph JSON, HF config.json, IOPDDL, profile tables,
/// plan files) uses these so that its messages read alike:
///   "ops[3].inputs[1]: expected a string, got number"
///   "tensors[0]: missing required field 'shape'"
/// The caller prefixes the source name ("ffn.json: ...") once, at the top.

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace autopar::json {

/// Path of a member: childPath("ops[3]", "inputs") is "ops[3].inputs"; at the root ("") it is
/// just the key.
std::string childPath(const std::string& path, std::string_view key);

/// Path of an array element: indexPath("ops", 3) is "ops[3]".
std::string indexPath(const std::string& path, size_t index);

/// "object", "array", "string", "number", "boolean" or "null".
std::string jsonTypeName(const nlohmann::json& value);

/// Parses JSON text. A syntax error becomes one line with the line number computed from the
/// byte position nlohmann reports, e.g. "line 4: JSON parse error: syntax error while parsing
/// value - unexpected '}'; expected '[', '{', or a literal". No source name is prefixed.
Expected<nlohmann::json> parseJsonText(const std::string& text);

/// Fails unless `value` is an object whose keys are all in `allowed`:
/// "ops[2]: unknown field 'atrs' (expected one of: name, kind, inputs, ...)".
Status checkObject(const nlohmann::json& value, const std::string& path,
                   std::initializer_list<std::string_view> allowed);

/// The member `key` of object `object`, or "path: missing required field 'key'".
Expected<const nlohmann::json*> requireField(const nlohmann::json& object, const std::string& path,
                                             std::string_view key);

/// Scalars: "path: expected a string, got number" and the like.
Expected<std::string> readString(const nlohmann::json& value, const std::string& path);
/// A name the outputs repeat (a model's: util/label.h's isLabel).
/// Example: "meta-llama/Llama-3.1-8B" -> itself; "x\nrm -rf ~" -> "_name_or_path: expected a
/// name of at most 256 characters without control characters".
Expected<std::string> readLabel(const nlohmann::json& value, const std::string& path);
Expected<bool> readBool(const nlohmann::json& value, const std::string& path);
/// An integer (3.0 and "3" are rejected) that fits in int64.
Expected<int64_t> readInt(const nlohmann::json& value, const std::string& path);
/// An integer >= 1: "path: expected a positive integer, got 0".
Expected<int64_t> readPositiveInt(const nlohmann::json& value, const std::string& path);
/// Any JSON number.
Expected<double> readNumber(const nlohmann::json& value, const std::string& path);

/// Arrays: each element is read with the scalar reader; errors name the element's path.
Expected<std::vector<int64_t>> readIntList(const nlohmann::json& value, const std::string& path);
Expected<std::vector<int64_t>> readPositiveIntList(const nlohmann::json& value,
                                                   const std::string& path);
Expected<std::vector<std::string>> readStringList(const nlohmann::json& value,
                                                  const std::string& path);

}  // namespace autopar::json
