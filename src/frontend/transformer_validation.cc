/// \file
/// validateTransformerConfig (frontend/transformer.h): the checks of a transformer's dimensions,
/// its vision tower, its parallel degrees and its experts, each error naming the field.

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "frontend/transformer.h"
#include "util/limits.h"

namespace autopar::frontend {

using Config = TransformerConfig;

namespace {

Error fieldError(const Config& config, std::string_view field, const std::string& message) {
  return Error{fmt::format("{}: {}: {}", config.name, field, message)};
}

Status validateDims(const Config& config) {
  struct Dim {
    std::string_view field;
    int64_t value;
    int64_t limit;  ///< util/limits.h
  };
  const Dim dims[] = {{"layers", config.layers, limits::kMaxLayers},
                      {"hidden", config.hidden, limits::kMaxHidden},
                      {"heads", config.heads, limits::kMaxHeads},
                      {"kvHeads", config.kvHeads, limits::kMaxHeads},
                      {"ffn", config.ffn, limits::kMaxHidden},
                      {"vocab", config.vocab, limits::kMaxVocab},
                      {"seq", config.seq, limits::kMaxSequence},
                      {"microBatch", config.microBatch, limits::kMaxGlobalBatch}};
  for (const auto& [field, value, limit] : dims) {
    if (value <= 0) {
      return fieldError(config, field, fmt::format("expected a positive size, got {}", value));
    }
    if (value > limit) {
      return fieldError(config, field,
                        fmt::format("{} is above the limit {} (docs/limits.md)", value, limit));
    }
  }
  if (config.hidden % config.heads != 0) {
    return fieldError(
        config, "heads",
        fmt::format("hidden {} is not divisible by heads {}", config.hidden, config.heads));
  }
  if (config.heads % config.kvHeads != 0) {
    return fieldError(
        config, "kvHeads",
        fmt::format("heads {} is not divisible by kvHeads {}", config.heads, config.kvHeads));
  }
  const int64_t headDim = config.hidden / config.heads;
  if (config.position == Config::Position::kRotary && headDim % 2 != 0) {
    return fieldError(
        config, "heads",
        fmt::format("head dim {} (hidden / heads) must be even for rotary positions", headDim));
  }
  if (config.normEpsilon <= 0) {
    return fieldError(config, "normEpsilon",
                      fmt::format("expected a positive number, got {}", config.normEpsilon));
  }
  if (!(config.hiddenDropout >= 0 && config.hiddenDropout < 1)) {
    return fieldError(config, "hiddenDropout",
                      fmt::format("expected a rate in [0, 1), got {}", config.hiddenDropout));
  }
  return {};
}

Status validateParallel(const Config& config) {
  if (!config.parallel) return {};
  const ir::ParallelConfig& parallel = *config.parallel;
  for (const auto& [field, degree] :
       {std::pair<std::string_view, int64_t>{"parallel.tp", parallel.tp},
        {"parallel.dp", parallel.dp},
        {"parallel.cp", parallel.cp},
        {"parallel.ep", parallel.ep}}) {
    if (degree < 1) {
      return fieldError(config, field, fmt::format("expected a positive degree, got {}", degree));
    }
  }
  if (config.microBatch % parallel.dp != 0) {
    return fieldError(
        config, "microBatch",
        fmt::format("{} is not divisible by dataParallel {}", config.microBatch, parallel.dp));
  }
  const int64_t cp = parallel.cp;
  const int64_t sequenceCuts = cp * (parallel.sequenceParallel ? parallel.tp : 1);
  const auto& v = config.vision;
  const int64_t text = config.seq - (v.layers > 0 ? v.patches / (v.merge * v.merge) : 0);
  if (cp > 1 && (config.seq % sequenceCuts != 0 || text % cp != 0)) {
    return fieldError(
        config, "seq",
        fmt::format("{} ({} of it text) is not divisible by contextParallel {}{}", config.seq, text,
                    cp, parallel.sequenceParallel ? " x tensorParallel" : ""));
  }
  for (const auto& [field, value] : tensorParallelExtents(config)) {
    if (field.starts_with("vision.")) continue;  // checked with the vision tower below
    if (value % parallel.tp == 0) continue;
    return fieldError(config, field,
                      fmt::format("{} is not divisible by tensorParallel {}", value, parallel.tp));
  }
  const int64_t stageDevices = parallel.dp * parallel.cp * parallel.tp;
  const bool vocabOverAll = config.headVocab == Config::VocabSplit::kAllDevices ||
                            config.lossVocab == Config::VocabSplit::kAllDevices;
  if (vocabOverAll && config.vocab % stageDevices != 0) {
    return fieldError(config, "vocab",
                      fmt::format("{} is not divisible by the {} devices (dp x cp x tp) the head "
                                  "splits it over",
                                  config.vocab, stageDevices));
  }
  if (parallel.sequenceParallel && config.seq % parallel.tp != 0) {
    return fieldError(config, "seq",
                      fmt::format("{} is not divisible by tensorParallel {} (sequenceParallel)",
                                  config.seq, parallel.tp));
  }
  return {};
}

Status validateVision(const Config& config) {
  const auto& v = config.vision;
  if (v.layers == 0) return {};
  const std::pair<std::string_view, int64_t> dims[] = {
      {"vision.layers", v.layers},   {"vision.hidden", v.hidden},
      {"vision.heads", v.heads},     {"vision.ffn", v.ffn},
      {"vision.patches", v.patches}, {"vision.patchInput", v.patchInput},
      {"vision.merge", v.merge}};
  for (const auto& [field, value] : dims) {
    if (value <= 0) {
      return fieldError(config, field, fmt::format("expected a positive size, got {}", value));
    }
  }
  if (v.hidden % v.heads != 0 || (v.hidden / v.heads) % 2 != 0) {
    return fieldError(
        config, "vision.heads",
        fmt::format("hidden {} must split into heads {} of an even size", v.hidden, v.heads));
  }
  if (v.patches % (v.merge * v.merge) != 0) {
    return fieldError(
        config, "vision.patches",
        fmt::format("{} is not divisible by merge^2 = {}", v.patches, v.merge * v.merge));
  }
  if (v.patches / (v.merge * v.merge) >= config.seq) {
    return fieldError(config, "vision.patches",
                      fmt::format("{} image tokens leave no text in a sequence of {}",
                                  v.patches / (v.merge * v.merge), config.seq));
  }
  if (config.position == Config::Position::kLearned) {
    return fieldError(config, "position", "a vision tower needs rotary or ALiBi positions");
  }
  const int64_t tp = config.degrees().tp;
  if (tp == 1) return {};
  for (const auto& [field, value] :
       {std::pair<std::string_view, int64_t>{"vision.heads", v.heads}, {"vision.ffn", v.ffn}}) {
    if (value % tp != 0) {
      return fieldError(config, field,
                        fmt::format("{} is not divisible by tensorParallel {}", value, tp));
    }
  }
  const int64_t imageTokens = v.patches / (v.merge * v.merge);
  if (config.degrees().sequenceParallel && (v.patches % tp != 0 || imageTokens % tp != 0)) {
    return fieldError(config, "vision.patches",
                      fmt::format("{} patches ({} image tokens) do not divide by tensorParallel {} "
                                  "(sequenceParallel)",
                                  v.patches, imageTokens, tp));
  }
  return {};
}

Status validateExperts(const Config& config) {
  const ir::ParallelConfig parallel = config.degrees();
  const int64_t ep = parallel.ep;
  if (config.experts == 0 && config.topK == 0) {
    if (ep == 1) return {};
    return fieldError(config, "parallel.ep",
                      fmt::format("{} needs experts; the model is dense", ep));
  }
  if (config.experts < 1 || config.topK < 1 || config.topK > config.experts) {
    return fieldError(config, "topK",
                      fmt::format("{} experts per token of {}: expected 1 to the experts",
                                  config.topK, config.experts));
  }
  if (config.seq * config.topK % config.experts != 0) {
    return fieldError(config, "seq",
                      fmt::format("{} tokens x topK {} do not spread evenly over {} experts",
                                  config.seq, config.topK, config.experts));
  }
  if (config.experts % ep != 0) {
    return fieldError(config, "parallel.ep",
                      fmt::format("{} does not divide the {} experts", ep, config.experts));
  }
  const int64_t dp = parallel.dp;
  if (dp % ep != 0) {
    return fieldError(config, "parallel.ep",
                      fmt::format("{} does not divide dataParallel {} (expert parallelism is "
                                  "carved out of the data-parallel ranks)",
                                  ep, dp));
  }
  // The slots of each expert are cut like the tokens: by cp, and by tp with sequence parallelism.
  const int64_t slots = config.seq * config.topK / config.experts;
  const int64_t cuts = parallel.cp * (parallel.sequenceParallel ? parallel.tp : 1);
  if (slots % cuts != 0) {
    return fieldError(config, "seq",
                      fmt::format("{} slots per expert (seq x topK / experts) do not divide by "
                                  "the {} sequence cuts (contextParallel x sequence-parallel tp)",
                                  slots, cuts));
  }
  return {};
}

}  // namespace

Status validateTransformerConfig(const TransformerConfig& config) {
  if (config.name.empty()) return Error{"name: expected a non-empty model name"};
  if (auto status = validateDims(config); !status) return status;
  if (auto status = validateVision(config); !status) return status;
  if (auto status = validateParallel(config); !status) return status;
  return validateExperts(config);
}

std::vector<std::pair<std::string, int64_t>> tensorParallelExtents(
    const TransformerConfig& config) {
  std::vector<std::pair<std::string, int64_t>> extents{{"heads", config.heads},
                                                       {"kvHeads", config.kvHeads},
                                                       {"ffn", config.ffn},
                                                       {"vocab", config.vocab}};
  if (config.vision.layers > 0) {
    extents.emplace_back("vision.heads", config.vision.heads);
    extents.emplace_back("vision.ffn", config.vision.ffn);
  }
  return extents;
}

}  // namespace autopar::frontend
