#pragma once
/// \file
/// Named models: the published configurations of the transformers that seed 000 lists as
/// validated under MindFormers' auto-parallel (LLaMA2, Baichuan2, Qwen, PanguAlpha), GPT-3 175B,
/// and seed 002's FFN. Each preset cites its source in model_presets.cc.
///
/// Example:
///   auto config = transformerPreset("llama2-70b");   // 80 layers, h 8192, GQA 64/8
///   config->microBatch = 2;
///   config->parallel = ir::ParallelConfig{.tp = 8, .dp = 2};
///   auto graph = buildTransformer(*config);          // 68,976,648,192 parameters

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/seed_models.h"
#include "frontend/transformer.h"
#include "ir/graph.h"
#include "util/expected.h"

namespace autopar::frontend {

/// Every preset name, lower-case: llama2-7b, llama2-13b, llama2-70b, baichuan2-7b, baichuan2-13b,
/// qwen-7b, qwen-14b, pangu-alpha-2.6b, pangu-alpha-13b, gpt3-175b, ffn.
const std::vector<std::string>& modelPresetNames();

/// The configuration of a transformer preset with microBatch 1 and no annotations. "ffn" is not
/// a transformer ("model preset 'ffn' is a feed-forward network; build it with buildFfn"); an
/// unknown name lists the known ones.
Expected<TransformerConfig> transformerPreset(const std::string& name);

/// Builds any preset for one micro-batch of `microBatch` samples: the FFN through buildFfn,
/// the transformers through buildTransformer.
Expected<ir::Graph> buildPresetGraph(const std::string& name, int64_t microBatch);

}  // namespace autopar::frontend
