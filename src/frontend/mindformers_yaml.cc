#include "frontend/mindformers_yaml.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cassert>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "frontend/mindformers_keys.h"
#include "frontend/mindformers_model.h"
#include "frontend/yaml_fields.h"
#include "util/text_file.h"

namespace autopar::frontend {

namespace {

using KeyPath = std::initializer_list<std::string_view>;

Expected<ParallelMode> readParallelMode(const YAML::Node& node, const std::string& path) {
  auto code = readYamlInt(node, path);
  if (code && *code >= 0 && *code <= 2) return static_cast<ParallelMode>(*code);
  const std::string got = code ? std::to_string(*code) : describeYamlNode(node);
  return Error{fmt::format("{}: expected 0, 1 or 2, got {}", path, got)};
}

Expected<SearchMode> readSearchMode(const YAML::Node& node, const std::string& path) {
  auto name = readYamlString(node, path);
  if (name && *name == searchModeName(SearchMode::kRecursiveProgramming)) {
    return SearchMode::kRecursiveProgramming;
  }
  if (name && *name == searchModeName(SearchMode::kShardingPropagation)) {
    return SearchMode::kShardingPropagation;
  }
  return Error{
      fmt::format(R"({}: expected "recursive_programming" or "sharding_propagation", got {})", path,
                  describeYamlNode(node))};
}

/// Reads `key` into `out` when given; `out` keeps its default otherwise.
template <class T>
Status readInto(const YAML::Node& root, KeyPath keys,
                Expected<T> (*reader)(const YAML::Node&, const std::string&), T& out) {
  std::optional<T> value;
  if (auto status = readYamlKey(root, keys, reader, value); !status) return status;
  if (value) out = *value;
  return {};
}

/// A positive integer MindFormers keeps in one place (`primary`) and autopar also accepts in
/// another; when both are given they must agree.
Status readAliasedCount(const YAML::Node& root, KeyPath primary, KeyPath alternative,
                        int64_t& out) {
  std::optional<int64_t> first;
  std::optional<int64_t> second;
  if (auto status = readYamlKey(root, primary, readYamlPositiveInt, first); !status) return status;
  if (auto status = readYamlKey(root, alternative, readYamlPositiveInt, second); !status) {
    return status;
  }
  if (first && second && *first != *second) {
    return Error{fmt::format("{} is {} but {} is {}; give one of them", fmt::join(primary, "."),
                             *first, fmt::join(alternative, "."), *second)};
  }
  if (first || second) out = first ? *first : *second;
  return {};
}

Status readParallelFlags(const YAML::Node& root, ParallelSettings& settings) {
  if (auto s = readYamlKey(root, {"use_parallel"}, readYamlBool, settings.useParallel); !s) {
    return s;
  }
  if (auto s =
          readInto(root, {"parallel", "parallel_mode"}, readParallelMode, settings.parallelMode);
      !s) {
    return s;
  }
  if (auto s = readInto(root, {"parallel", "search_mode"}, readSearchMode, settings.searchMode);
      !s) {
    return s;
  }
  for (const auto& [key, out] : {std::pair{"auto_pipeline", &settings.autoPipeline},
                                 std::pair{"full_batch", &settings.fullBatch}}) {
    if (auto s = readInto(root, {"parallel", key}, readYamlBool, *out); !s) return s;
  }
  if (auto s =
          readInto(root, {"parallel", "enable_alltoall"}, readYamlBool, settings.enableAllToAll);
      !s) {
    return s;
  }
  if (auto s =
          readInto(root, {"parallel", "parallel_optimizer_config", "gradient_accumulation_shard"},
                   readYamlBool, settings.gradientAccumulationShard);
      !s) {
    return s;
  }
  if (auto s =
          readInto(root, {"parallel", "parallel_optimizer_config", "parallel_optimizer_threshold"},
                   readYamlInt, settings.parallelOptimizerThresholdKb);
      !s) {
    return s;
  }
  if (settings.parallelOptimizerThresholdKb < 0) {
    return Error{
        fmt::format("parallel.parallel_optimizer_config.parallel_optimizer_threshold: "
                    "expected a size in KB >= 0, got {}",
                    settings.parallelOptimizerThresholdKb)};
  }
  return readYamlKey(root, {"parallel", "enable_parallel_optimizer"}, readYamlBool,
                     settings.enableParallelOptimizer);
}

/// MindFormers' recompute_config block and parallel_config.use_seq_parallel.
Status readRecomputeConfig(const YAML::Node& root, ParallelSettings& settings) {
  const std::pair<const char*, bool*> flags[] = {
      {"recompute", &settings.recompute},
      {"select_recompute", &settings.selectRecompute},
      {"mp_comm_recompute", &settings.mpCommRecompute},
      {"parallel_optimizer_comm_recompute", &settings.parallelOptimizerCommRecompute},
      {"recompute_slice_activation", &settings.recomputeSliceActivation},
  };
  for (const auto& [key, out] : flags) {
    if (auto s = readInto(root, {"recompute_config", key}, readYamlBool, *out); !s) return s;
  }
  return readInto(root, {"parallel_config", "use_seq_parallel"}, readYamlBool,
                  settings.useSeqParallel);
}

/// parallel_config.mem_coeff: a positive number, `auto` (the smallest that fits) or `fastest`
/// (the fastest that fits): the rule, and the number when given.
Expected<std::pair<MemCoeffRule, double>> readMemCoeff(const YAML::Node& node,
                                                       const std::string& path) {
  for (MemCoeffRule rule : {MemCoeffRule::kAuto, MemCoeffRule::kFastest}) {
    if (node.IsScalar() && node.Scalar() == memCoeffRuleName(rule)) return std::pair{rule, 0.0};
  }
  auto value = readYamlPositiveNumber(node, path);
  if (!value) {
    // The number reader's message, naming the words it does not know too.
    std::string message = value.error().message;
    const std::string expected = "expected a positive number";
    if (auto at = message.find(expected); at != std::string::npos) {
      message.insert(at + expected.size(), ", auto or fastest");
    }
    return Error{message};
  }
  return std::pair{MemCoeffRule::kGiven, *value};
}

Status readParallelConfig(const YAML::Node& root, ParallelSettings& settings) {
  std::optional<std::pair<MemCoeffRule, double>> memCoeff;
  if (auto s = readYamlKey(root, {"parallel_config", "mem_coeff"}, readMemCoeff, memCoeff); !s) {
    return s;
  }
  if (memCoeff) {
    settings.memCoeffRule = memCoeff->first;
    if (memCoeff->first == MemCoeffRule::kGiven) settings.memCoeff = memCoeff->second;
  }
  const std::pair<const char*, int64_t*> counts[] = {
      {"data_parallel", &settings.dataParallel},
      {"model_parallel", &settings.modelParallel},
      {"pipeline_stage", &settings.pipelineStage},
      {"micro_batch_num", &settings.microBatchNum},
  };
  for (const auto& [key, out] : counts) {
    if (auto s = readInto(root, {"parallel_config", key}, readYamlPositiveInt, *out); !s) return s;
  }
  if (auto s =
          readInto(root, {"parallel_config", "vocab_emb_dp"}, readYamlBool, settings.vocabEmbDp);
      !s) {
    return s;
  }
  if (auto s = readAliasedCount(root, {"parallel_config", "micro_batch_interleave_num"},
                                {"micro_batch_interleave_num"}, settings.microBatchInterleaveNum);
      !s) {
    return s;
  }
  return readAliasedCount(root, {"parallel_config", "gradient_accumulation_steps"},
                          {"runner_config", "gradient_accumulation_steps"},
                          settings.gradientAccumulationSteps);
}

/// MindFormers' interleaved pipeline (parallel.pipeline_config and model_config.pp_interleave_num)
/// and the parallel degrees plan --config does not model, which are refused rather than dropped.
Status readPipelineConfig(const YAML::Node& root, ParallelSettings& settings) {
  bool interleave = false;
  std::optional<std::string> scheduler;
  if (auto s = readInto(root, {"parallel", "pipeline_config", "pipeline_interleave"}, readYamlBool,
                        interleave);
      !s) {
    return s;
  }
  if (auto s = readYamlKey(root, {"parallel", "pipeline_config", "pipeline_scheduler"},
                           readYamlString, scheduler);
      !s) {
    return s;
  }
  if (scheduler && *scheduler != "1f1b") {
    return Error{fmt::format(
        "parallel.pipeline_config.pipeline_scheduler: '{}' is not modelled; expected '1f1b' (the "
        "interleaved 1F1B schedule)",
        *scheduler)};
  }
  if (auto s = readInto(root, {"model", "model_config", "pp_interleave_num"}, readYamlPositiveInt,
                        settings.ppInterleaveNum);
      !s) {
    return s;
  }
  if (settings.ppInterleaveNum > 1 && !interleave) {
    return Error{
        fmt::format("model.model_config.pp_interleave_num: {} needs parallel.pipeline_config."
                    "pipeline_interleave: True (MindFormers interleaves only then)",
                    settings.ppInterleaveNum)};
  }
  for (const char* key : {"context_parallel", "expert_parallel"}) {
    int64_t degree = 1;
    if (auto s = readInto(root, {"parallel_config", key}, readYamlPositiveInt, degree); !s) {
      return s;
    }
    if (degree > 1) {
      return Error{fmt::format(
          "parallel_config.{}: {} is not modelled by plan --config; autopar estimate and search "
          "take --{} {}",
          key, degree, key == std::string_view("context_parallel") ? "cp" : "ep", degree)};
    }
  }
  return {};
}

/// MindSpore's PipelineCell needs at least one micro-batch per stage. With auto_pipeline the
/// stage count is chosen later, within micro_batch_num.
Status checkPipeline(const ParallelSettings& settings) {
  if (settings.autoPipeline || settings.pipelineStage <= settings.microBatchNum) return {};
  return Error{fmt::format(
      "parallel_config.micro_batch_num: expected at least pipeline_stage ({}), got {} (every "
      "pipeline stage needs a micro-batch)",
      settings.pipelineStage, settings.microBatchNum)};
}

/// context.max_device_memory: "<number>GB", read as MindSpore reads it (GB = 2^30 bytes), from
/// 1 to 4096.
Expected<int64_t> readDeviceMemory(const YAML::Node& node, const std::string& path) {
  auto text = readYamlString(node, path);
  if (!text) return text.error();
  const Error error{
      fmt::format("{}: expected a size like \"59GB\" (1 to 4096 GB), got '{}'", path, *text)};
  if (text->size() < 3 || !text->ends_with("GB")) return error;
  const std::string number = text->substr(0, text->size() - 2);
  char* end = nullptr;
  const double gib = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !(gib >= 1 && gib <= 4096)) return error;
  return static_cast<int64_t>(gib * 1024 * 1024 * 1024);
}

Expected<MindFormersConfig> configFromYaml(const YAML::Node& root, const std::string& modelName) {
  MindFormersConfig config;
  if (!isYamlUnset(root) && !root.IsMap()) {
    return Error{
        fmt::format("expected a mapping at the top level, got {}", describeYamlNode(root))};
  }
  if (auto status = readParallelFlags(root, config.parallel); !status) return status.error();
  if (auto status = readParallelConfig(root, config.parallel); !status) return status.error();
  if (auto status = readRecomputeConfig(root, config.parallel); !status) return status.error();
  if (auto status = readPipelineConfig(root, config.parallel); !status) return status.error();
  if (auto status = checkPipeline(config.parallel); !status) return status.error();
  if (auto status =
          readAliasedCount(root, {"runner_config", "batch_size"}, {"batch_size"}, config.batchSize);
      !status) {
    return status.error();
  }
  if (auto status = readYamlKey(root, {"context", "max_device_memory"}, readDeviceMemory,
                                config.maxDeviceMemoryBytes);
      !status) {
    return status.error();
  }
  if (auto status = readYamlKey(root, {"model", "arch", "type"}, readYamlString, config.archType);
      !status) {
    return status.error();
  }
  auto model = readMindFormersModel(root, modelName);
  if (!model) return model.error();
  config.model = std::move(*model);
  if (config.model) {
    applyMindFormersVocabSplits(*config.model,
                                mindformersFamily(config.archType, config.model->name),
                                config.parallel.vocabEmbDp);
  }
  if (auto status = readYamlKey(root, {"framework"}, readYamlString, config.framework); !status) {
    return status.error();
  }
  return config;
}

bool usesPipeline(const MindFormersConfig& config) { return config.parallel.pipelineStage > 1; }

/// The four factors of seed 000's formula, with their names, in the table's order.
std::array<std::pair<const char*, int64_t>, 4> batchFactors(const MindFormersConfig& config,
                                                            int64_t deviceNum) {
  const ParallelSettings& parallel = config.parallel;
  return {{
      {"batch_size", config.batchSize},
      parallel.fullBatch ? std::pair{"data_parallel", parallel.dataParallel}
                         : std::pair{"device_num", deviceNum},
      {"micro_batch_interleave_num", parallel.microBatchInterleaveNum},
      usesPipeline(config)
          ? std::pair{"micro_batch_num", parallel.microBatchNum}
          : std::pair{"gradient_accumulation_steps", parallel.gradientAccumulationSteps},
  }};
}

}  // namespace

std::string_view parallelModeName(ParallelMode mode) {
  switch (mode) {
    case ParallelMode::kDataParallel:
      return "data_parallel";
    case ParallelMode::kSemiAuto:
      return "semi_auto_parallel";
    case ParallelMode::kAuto:
      return "auto_parallel";
  }
  return "unknown";
}

std::string_view searchModeName(SearchMode mode) {
  return mode == SearchMode::kRecursiveProgramming ? "recursive_programming"
                                                   : "sharding_propagation";
}

std::string_view memCoeffRuleName(MemCoeffRule rule) {
  switch (rule) {
    case MemCoeffRule::kAuto:
      return "auto";
    case MemCoeffRule::kFastest:
      return "fastest";
    case MemCoeffRule::kGiven:
      break;
  }
  return "";
}

Expected<MindFormersConfig> parseMindFormersYaml(const std::string& text,
                                                 const std::string& sourceName) {
  auto root = parseYamlText(text);
  if (!root) return root.error().in(sourceName);
  if (auto known = checkKnownKeys(*root); !known) return known.error().in(sourceName);
  auto config = configFromYaml(*root, std::filesystem::path(sourceName).stem().string());
  if (!config) return config.error().in(sourceName);
  config->sourceName = sourceName;
  return config;
}

Expected<MindFormersConfig> loadMindFormersYaml(const std::string& path) {
  auto text = readTextFile(path);
  if (!text) return text.error();
  return parseMindFormersYaml(*text, path);
}

int64_t globalBatchSize(const MindFormersConfig& config, int64_t deviceNum) {
  assert(deviceNum >= 1);
  int64_t product = 1;
  for (const auto& [name, value] : batchFactors(config, deviceNum)) product *= value;
  return product;
}

std::string globalBatchSizeFormula(const MindFormersConfig& config) {
  std::vector<std::string> names;
  for (const auto& [name, value] : batchFactors(config, 1)) names.emplace_back(name);
  return fmt::format("{}", fmt::join(names, " * "));
}

std::string globalBatchSizeReport(const MindFormersConfig& config, int64_t deviceNum) {
  std::vector<int64_t> values;
  for (const auto& [name, value] : batchFactors(config, deviceNum)) values.push_back(value);
  return fmt::format("global batch size = {} = {} = {}", globalBatchSizeFormula(config),
                     fmt::join(values, " * "), globalBatchSize(config, deviceNum));
}

int64_t clusterMicroBatchSize(const MindFormersConfig& config, int64_t deviceNum) {
  const auto factors = batchFactors(config, deviceNum);
  // The last factor counts micro-batches per step; the first three make up one micro-batch.
  return factors[0].second * factors[1].second * factors[2].second;
}

bool shardsByLayout(const ParallelSettings& parallel) {
  return parallel.parallelMode == ParallelMode::kSemiAuto ||
         (parallel.parallelMode == ParallelMode::kAuto &&
          parallel.searchMode == SearchMode::kShardingPropagation);
}

Status checkDeviceCount(const MindFormersConfig& config, int64_t deviceNum) {
  const ParallelSettings& parallel = config.parallel;
  if (!shardsByLayout(parallel)) return {};
  const int64_t needed = parallel.dataParallel * parallel.modelParallel * parallel.pipelineStage;
  if (needed == deviceNum) return {};
  const Error error{fmt::format(
      "parallel_config: data_parallel {} * model_parallel {} * pipeline_stage {} = {} devices, "
      "but the cluster has {}",
      parallel.dataParallel, parallel.modelParallel, parallel.pipelineStage, needed, deviceNum)};
  return error.in(config.sourceName);
}

}  // namespace autopar::frontend
