#pragma once
/// \file
/// A rank's measured steps summarised for `autopar profile`: medians over the steps, the first
/// (which warms up) left out when there are more.

#include <array>
#include <cstdint>

#include "runtime/executor.h"
#include "runtime/result_file.h"

namespace autopar::runtime {

/// Medians of one rank's step figures.
struct MedianFigures {
  double forward = 0;
  double backward = 0;
  double activation = 0;
  std::array<PartCost, kParts> parts{};
};

MedianFigures medianFigures(const RankResult& result);

}  // namespace autopar::runtime
