#pragma once
/// \file
/// Reading an input file whole, with the checks every input reader needs: the path names a regular
/// file or a pipe (a directory or a device given as a file is said so, not read), of at most
/// limits::kMaxInputFileBytes, and a pipe reaches its end within limits::kMaxInputReadSeconds;
/// read without error.
///   readTextFile("run.yaml") -> the text, or "run.yaml: is a directory, expected a file"
///   readTextFile("/dev/zero") -> "/dev/zero: is a device, expected a file or a pipe"

#include <string>

#include "util/expected.h"

namespace autopar {

Expected<std::string> readTextFile(const std::string& path);

}  // namespace autopar
