#pragma once
/// \file
/// A rank's result (its step reports and parameter blocks) in LibTorch's archive format: launched
/// ranks leave one file each for `check` and `profile` to read.

#include <string>

#include "runtime/executor.h"
#include "util/expected.h"

namespace autopar::runtime {

Status writeResult(const RankResult& result, const std::string& path);
Expected<RankResult> readResult(const std::string& path);

}  // namespace autopar::runtime
