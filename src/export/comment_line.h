#pragma once
/// \file
/// Free text (a file name, a model's name) inside a comment line of a written script or config.

#include <algorithm>
#include <string>
#include <string_view>

#include "util/label.h"

namespace autopar::exporters {

/// `text` as part of one comment line: a control character (a newline in a file name) would end
/// the comment and run the rest as code, so each becomes '?'.
/// Example: "a\necho x" -> "a?echo x".
inline std::string commentLine(std::string_view text) {
  std::string line(text);
  std::replace_if(line.begin(), line.end(), isControlCharacter, '?');
  return line;
}

}  // namespace autopar::exporters
