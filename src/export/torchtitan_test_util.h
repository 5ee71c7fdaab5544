#pragma once
/// \file
/// The plan and model the torchtitan exporters' tests write.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "cost/framework.h"
#include "frontend/model_presets.h"
#include "frontend/transformer.h"
#include "ir/training_setup.h"

namespace autopar::exporters::testing {

/// TP 2, DP 4 under ZeRO 3 (FSDP2), micro-batch 2, global batch 32, sequence 4096, under
/// torchtitan at `release` (empty: the profile's own).
inline ir::TrainingSetup fsdpConfig(std::string_view release = {}) {
  ir::TrainingSetup config;
  config.tp = 2;
  config.dp = 4;
  config.mbs = 2;
  config.gbs = 32;
  config.seq = 4096;
  config.zero = 3;
  config.framework = ir::Framework::kTorchtitan;
  config.frameworkRelease = std::string(release);
  config.codePath = cost::releaseCodePath(config.framework, release);
  return config;
}

inline frontend::TransformerConfig llama2() {
  auto model = frontend::transformerPreset("llama2-7b");
  EXPECT_TRUE(model.ok());
  return model.ok() ? *model : frontend::TransformerConfig{};
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace autopar::exporters::testing
