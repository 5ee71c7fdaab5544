#pragma once
/// \file
/// Configurations the planner's tests price.

#include "planner/configuration/configuration_estimate.h"

namespace autopar::planner::testing {

/// LLaMA2-7B at TP 2 DP 4, global batch 32, under Megatron-Core at ZeRO `zero`.
inline MegatronConfig llama7bTp2Dp4(int zero = 0) {
  MegatronConfig config;
  config.model = "llama2-7b";
  config.tp = 2;
  config.dp = 4;
  config.gbs = 32;
  config.zero = zero;
  return config;
}

}  // namespace autopar::planner::testing
