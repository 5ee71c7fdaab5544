#pragma once
/// \file
/// Reading an input file whole, with the checks every input reader needs: the path names a regular
/// file (a directory given as a file is said so, not read as empty), no larger than
/// limits::kMaxInputFileBytes, read without error.
///   readTextFile("run.yaml") -> the text, or "run.yaml: is a directory, expected a file"

#include <string>

#include "util/expected.h"

namespace autopar {

Expected<std::string> readTextFile(const std::string& path);

}  // namespace autopar
