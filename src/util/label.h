#pragma once
/// \file
/// Names the outputs repeat (a model's, a device group's): bounded and free of control
/// characters, so that none can end a comment line of a written script or config and run the
/// rest as code.

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "util/limits.h"

namespace autopar {

/// A control character: below 0x20 (a newline, a tab) or DEL.
inline bool isControlCharacter(char c) {
  return static_cast<unsigned char>(c) < 0x20 || c == '\x7f';
}

/// Whether `text` is a name the outputs may repeat: at most limits::kMaxNameLength characters,
/// none of them a control character. Example: "meta-llama/Llama-3.1-8B" -> true; "x\nrm" ->
/// false.
inline bool isLabel(std::string_view text) {
  return text.size() <= limits::kMaxNameLength &&
         std::none_of(text.begin(), text.end(), isControlCharacter);
}

/// The error of a name at `path` that is not one: "groups[0].name: expected a name of at most 256
/// characters without control characters".
inline std::string notALabel(std::string_view path) {
  return fmt::format("{}: expected a name of at most {} characters without control characters",
                     path, limits::kMaxNameLength);
}

}  // namespace autopar
