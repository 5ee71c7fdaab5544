#pragma once
/// \file
/// Strategies in the seeds' notation: for each input of an op, the number of cuts of each
/// dimension. "((2,1),(1,4))" and "[[2,1],[1,4]]" both parse to {{2,1},{1,4}}.

#include <string>
#include <string_view>

#include "ir/op.h"
#include "util/expected.h"

namespace autopar::layout {

using Strategy = ir::StrategyCuts;

/// Parses "((2,1),(1,4))" or "[[2,1],[1,4]]"; a one-dim input may be written "(8,)". Every cut must
/// be a positive integer. Errors say which character was unexpected.
Expected<Strategy> parseStrategy(std::string_view text);

/// Prints the seeds' form, "((2,1),(1,4))".
std::string strategyToString(const Strategy& strategy);

/// Product of the cuts of one input, e.g. (2,4) -> 8.
int64_t cutProduct(const std::vector<int64_t>& inputCuts);

}  // namespace autopar::layout
