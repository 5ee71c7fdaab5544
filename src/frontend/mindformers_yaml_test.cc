#include "frontend/mindformers_yaml.h"

#include <gtest/gtest.h>

#include <string>

#include "frontend/mindformers_model.h"
#include "frontend/model_presets.h"

namespace autopar::frontend {
namespace {

/// Parses `text` as "run.yaml" and returns the error message, or "<ok>".
std::string errorOf(const std::string& text) {
  auto config = parseMindFormersYaml(text, "run.yaml");
  return config ? "<ok>" : config.error().message;
}

MindFormersConfig parsed(const std::string& text) {
  auto config = parseMindFormersYaml(text, "run.yaml");
  EXPECT_TRUE(config) << config.error().message;
  return config ? *config : MindFormersConfig{};
}

TEST(MindFormersYaml, ReadsSeed000Snippet) {
  const MindFormersConfig config = parsed(R"(
use_parallel: True
parallel:
  parallel_mode: 2
  search_mode: "recursive_programming"
  auto_pipeline: True
parallel_config:
  mem_coeff: 0.1
)");
  EXPECT_EQ(config.sourceName, "run.yaml");
  EXPECT_EQ(config.parallel.useParallel, std::optional<bool>(true));
  EXPECT_EQ(config.parallel.parallelMode, ParallelMode::kAuto);
  EXPECT_EQ(config.parallel.searchMode, SearchMode::kRecursiveProgramming);
  EXPECT_TRUE(config.parallel.autoPipeline);
  EXPECT_DOUBLE_EQ(config.parallel.memCoeff, 0.1);
  EXPECT_FALSE(config.model.has_value());
}

TEST(MindFormersYaml, EmptyDocumentGivesTheDefaults) {
  const MindFormersConfig config = parsed("");
  const ParallelSettings& parallel = config.parallel;
  EXPECT_FALSE(parallel.useParallel.has_value());
  EXPECT_EQ(parallel.parallelMode, ParallelMode::kSemiAuto);
  EXPECT_EQ(parallel.searchMode, SearchMode::kRecursiveProgramming);
  EXPECT_FALSE(parallel.autoPipeline);
  EXPECT_FALSE(parallel.fullBatch);
  EXPECT_FALSE(parallel.enableParallelOptimizer.has_value());
  EXPECT_DOUBLE_EQ(parallel.memCoeff, 0.1);
  EXPECT_EQ(parallel.dataParallel, 1);
  EXPECT_EQ(parallel.modelParallel, 1);
  EXPECT_EQ(parallel.pipelineStage, 1);
  EXPECT_EQ(parallel.microBatchNum, 1);
  EXPECT_EQ(parallel.microBatchInterleaveNum, 1);
  EXPECT_EQ(parallel.gradientAccumulationSteps, 1);
  EXPECT_EQ(config.batchSize, 1);
  EXPECT_FALSE(config.model.has_value());
}

TEST(MindFormersYaml, NullValuesCountAsNotGiven) {
  const MindFormersConfig config = parsed("parallel:\nparallel_config:\n  mem_coeff: ~\n");
  EXPECT_DOUBLE_EQ(config.parallel.memCoeff, 0.1);
}

TEST(MindFormersYaml, ReadsEveryParallelKeyAndLeavesMindFormersOwnAlone) {
  const MindFormersConfig config = parsed(R"(
optimizer: {type: AdamW, beta1: 0.9}
callbacks: [{type: MFLossMonitor}]
parallel:
  parallel_mode: 0
  search_mode: sharding_propagation
  full_batch: yes
  enable_parallel_optimizer: off
  gradients_mean: False
parallel_config:
  mem_coeff: 4
  data_parallel: 2
  model_parallel: 4
  pipeline_stage: 2
  micro_batch_num: 8
  micro_batch_interleave_num: 2
  gradient_accumulation_steps: 3
  vocab_emb_dp: False
recompute_config:
  recompute_slice_activation: True
context:
  max_device_memory: "58.5GB"
batch_size: 6
)");
  const ParallelSettings& parallel = config.parallel;
  EXPECT_EQ(parallel.parallelMode, ParallelMode::kDataParallel);
  EXPECT_EQ(parallel.searchMode, SearchMode::kShardingPropagation);
  EXPECT_TRUE(parallel.fullBatch);
  ASSERT_TRUE(parallel.enableParallelOptimizer.has_value());
  EXPECT_FALSE(*parallel.enableParallelOptimizer);
  EXPECT_DOUBLE_EQ(parallel.memCoeff, 4.0);
  EXPECT_EQ(parallel.dataParallel, 2);
  EXPECT_EQ(parallel.modelParallel, 4);
  EXPECT_EQ(parallel.pipelineStage, 2);
  EXPECT_EQ(parallel.microBatchNum, 8);
  EXPECT_EQ(parallel.microBatchInterleaveNum, 2);
  EXPECT_EQ(parallel.gradientAccumulationSteps, 3);
  EXPECT_FALSE(parallel.vocabEmbDp);
  EXPECT_TRUE(parallel.recomputeSliceActivation);
  EXPECT_EQ(config.maxDeviceMemoryBytes, int64_t{117} << 29);  // 58.5 GiB: MindSpore's GB
  EXPECT_EQ(config.batchSize, 6);
}

TEST(MindFormersYaml, MaxDeviceMemoryIsASizeInGb) {
  EXPECT_EQ(errorOf("context:\n  max_device_memory: 59\n"),
            "run.yaml: context.max_device_memory: expected a size like \"59GB\" (1 to 4096 GB), "
            "got '59'");
  EXPECT_EQ(errorOf("context:\n  max_device_memory: \"59G\"\n"),
            "run.yaml: context.max_device_memory: expected a size like \"59GB\" (1 to 4096 GB), "
            "got '59G'");
  EXPECT_EQ(errorOf("context:\n  max_device_memory: \"0.5GB\"\n"),
            "run.yaml: context.max_device_memory: expected a size like \"59GB\" (1 to 4096 GB), "
            "got '0.5GB'");
}

/// A key no MindFormers yaml holds is a mistake: the error names it and the closest known key.
TEST(MindFormersYaml, AMisspeltKeyIsNamedWithTheClosestKnownOne) {
  EXPECT_EQ(errorOf("parallel_config:\n  pipline_stage: 2\n"),
            "run.yaml: parallel_config.pipline_stage: unknown key; did you mean pipeline_stage? "
            "(docs/mindformers-yaml.md)");
  EXPECT_EQ(errorOf("paralel:\n  parallel_mode: 1\n"),
            "run.yaml: paralel: unknown key; did you mean parallel? (docs/mindformers-yaml.md)");
  EXPECT_EQ(errorOf("model:\n  model_config:\n    num_layer: 2\n"),
            "run.yaml: model.model_config.num_layer: unknown key; did you mean num_layers? "
            "(docs/mindformers-yaml.md)");
  EXPECT_EQ(errorOf("recompute_config:\n  select_recompute: True\n  recompute_slice_activation: "
                    "True\n"),
            "<ok>")
      << "MindFormers' own keys";
  EXPECT_EQ(errorOf("parallel_config:\n  data_parallel: 2\n  data_parallel: 4\n"),
            "run.yaml: parallel_config.data_parallel: given twice (MindFormers would take the "
            "last, autopar the first); give it once");
}

TEST(MindFormersYaml, AcceptsMindFormersOwnPlacesForAliasedKeys) {
  const MindFormersConfig config = parsed(R"(
runner_config:
  batch_size: 4
  gradient_accumulation_steps: 8
micro_batch_interleave_num: 2
)");
  EXPECT_EQ(config.batchSize, 4);
  EXPECT_EQ(config.parallel.gradientAccumulationSteps, 8);
  EXPECT_EQ(config.parallel.microBatchInterleaveNum, 2);
}

TEST(MindFormersYaml, AliasedKeysMustAgreeWhenBothAreGiven) {
  EXPECT_EQ(errorOf("runner_config:\n  batch_size: 4\nbatch_size: 8\n"),
            "run.yaml: runner_config.batch_size is 4 but batch_size is 8; give one of them");
  EXPECT_EQ(errorOf("runner_config:\n  batch_size: 4\nbatch_size: 4\n"), "<ok>");
  EXPECT_EQ(errorOf("parallel_config:\n  gradient_accumulation_steps: 2\n"
                    "runner_config:\n  gradient_accumulation_steps: 4\n"),
            "run.yaml: parallel_config.gradient_accumulation_steps is 2 but "
            "runner_config.gradient_accumulation_steps is 4; give one of them");
}

// Seed 000's table, one test per row: batch_size 2, 16 devices, data_parallel 4,
// micro_batch_interleave_num 3, gradient_accumulation_steps 5, micro_batch_num 7.
MindFormersConfig batchConfig(bool pipeline, bool fullBatch) {
  MindFormersConfig config;
  config.batchSize = 2;
  config.parallel.dataParallel = 4;
  config.parallel.microBatchInterleaveNum = 3;
  config.parallel.gradientAccumulationSteps = 5;
  config.parallel.microBatchNum = 7;
  config.parallel.pipelineStage = pipeline ? 2 : 1;
  config.parallel.fullBatch = fullBatch;
  return config;
}

TEST(GlobalBatchSize, NoPipelineNotFullBatch) {
  const MindFormersConfig config = batchConfig(false, false);
  EXPECT_EQ(globalBatchSize(config, 16), 2 * 16 * 3 * 5);
  EXPECT_EQ(globalBatchSizeFormula(config),
            "batch_size * device_num * micro_batch_interleave_num * gradient_accumulation_steps");
  EXPECT_EQ(clusterMicroBatchSize(config, 16), 2 * 16 * 3);
}

TEST(GlobalBatchSize, NoPipelineFullBatch) {
  const MindFormersConfig config = batchConfig(false, true);
  EXPECT_EQ(globalBatchSize(config, 16), 2 * 4 * 3 * 5);
  EXPECT_EQ(
      globalBatchSizeFormula(config),
      "batch_size * data_parallel * micro_batch_interleave_num * gradient_accumulation_steps");
  EXPECT_EQ(clusterMicroBatchSize(config, 16), 2 * 4 * 3);
}

TEST(GlobalBatchSize, PipelineNotFullBatch) {
  const MindFormersConfig config = batchConfig(true, false);
  EXPECT_EQ(globalBatchSize(config, 16), 2 * 16 * 3 * 7);
  EXPECT_EQ(globalBatchSizeFormula(config),
            "batch_size * device_num * micro_batch_interleave_num * micro_batch_num");
}

TEST(GlobalBatchSize, PipelineFullBatch) {
  const MindFormersConfig config = batchConfig(true, true);
  EXPECT_EQ(globalBatchSize(config, 16), 2 * 4 * 3 * 7);
  EXPECT_EQ(globalBatchSizeFormula(config),
            "batch_size * data_parallel * micro_batch_interleave_num * micro_batch_num");
  EXPECT_EQ(clusterMicroBatchSize(config, 16), 2 * 4 * 3);
}

TEST(GlobalBatchSize, ReportShowsTheFormulaWithItsNumbers) {
  EXPECT_EQ(globalBatchSizeReport(batchConfig(false, false), 16),
            "global batch size = batch_size * device_num * micro_batch_interleave_num * "
            "gradient_accumulation_steps = 2 * 16 * 3 * 5 = 480");
}

TEST(GlobalBatchSize, ExampleConfigGives64) {
  auto config = loadMindFormersYaml(std::string(AUTOPAR_SOURCE_DIR) +
                                    "/examples/configs/llama2_7b_auto_parallel.yaml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(globalBatchSizeReport(*config, 8),
            "global batch size = batch_size * data_parallel * micro_batch_interleave_num * "
            "gradient_accumulation_steps = 1 * 8 * 1 * 8 = 64");
}

TEST(MindFormersYaml, TypeErrorsNameFileKeyAndExpectation) {
  EXPECT_EQ(errorOf("parallel_config:\n  mem_coeff: abc\n"),
            "run.yaml: parallel_config.mem_coeff: expected a positive number, auto or fastest, got "
            "'abc'");
  EXPECT_EQ(
      errorOf("parallel_config:\n  mem_coeff: 0\n"),
      "run.yaml: parallel_config.mem_coeff: expected a positive number, auto or fastest, got '0'");
  EXPECT_EQ(errorOf("parallel_config:\n  mem_coeff: -0.5\n"),
            "run.yaml: parallel_config.mem_coeff: expected a positive number, auto or fastest, got "
            "'-0.5'");
  EXPECT_EQ(errorOf("parallel_config:\n  mem_coeff: .inf\n"),
            "run.yaml: parallel_config.mem_coeff: expected a positive number, auto or fastest, got "
            "'.inf'");
  EXPECT_EQ(
      errorOf("parallel_config:\n  mem_coeff: \"0.1\"\n"),
      "run.yaml: parallel_config.mem_coeff: expected a positive number, auto or fastest, got '0.1' "
      "(a quoted string)");
  EXPECT_EQ(errorOf("parallel_config:\n  data_parallel: 0\n"),
            "run.yaml: parallel_config.data_parallel: expected a positive integer, got '0'");
  EXPECT_EQ(errorOf("parallel_config:\n  pipeline_stage: 2.0\n"),
            "run.yaml: parallel_config.pipeline_stage: expected a positive integer, got '2.0'");
  EXPECT_EQ(errorOf("runner_config:\n  batch_size: [1, 2]\n"),
            "run.yaml: runner_config.batch_size: expected a positive integer, got a sequence");
  EXPECT_EQ(errorOf("use_parallel: maybe\n"),
            "run.yaml: use_parallel: expected a boolean (true or false), got 'maybe'");
  EXPECT_EQ(errorOf("parallel:\n  full_batch: 1\n"),
            "run.yaml: parallel.full_batch: expected a boolean (true or false), got '1'");
  EXPECT_EQ(errorOf("parallel:\n  enable_parallel_optimizer: {a: 1}\n"),
            "run.yaml: parallel.enable_parallel_optimizer: expected a boolean (true or false), "
            "got a mapping");
}

TEST(MindFormersYaml, ModeErrors) {
  EXPECT_EQ(errorOf("parallel:\n  parallel_mode: 5\n"),
            "run.yaml: parallel.parallel_mode: expected 0, 1 or 2, got 5");
  EXPECT_EQ(errorOf("parallel:\n  parallel_mode: 3\n"),
            "run.yaml: parallel.parallel_mode: expected 0, 1 or 2, got 3");
  EXPECT_EQ(errorOf("parallel:\n  parallel_mode: auto\n"),
            "run.yaml: parallel.parallel_mode: expected 0, 1 or 2, got 'auto'");
  EXPECT_EQ(errorOf("parallel:\n  search_mode: dynamic_programming\n"),
            "run.yaml: parallel.search_mode: expected \"recursive_programming\" or "
            "\"sharding_propagation\", got 'dynamic_programming'");
}

TEST(MindFormersYaml, StructureErrors) {
  EXPECT_EQ(errorOf("parallel: yes\n"), "run.yaml: parallel: expected a mapping, got 'yes'");
  EXPECT_EQ(errorOf("- a\n- b\n"), "run.yaml: expected a mapping at the top level, got a sequence");
  EXPECT_EQ(errorOf("model: [1]\n"), "run.yaml: model: expected a mapping, got a sequence");
  EXPECT_EQ(errorOf("model:\n  model_config: 7\n"),
            "run.yaml: model.model_config: expected a mapping, got '7'");
}

TEST(MindFormersYaml, SyntaxErrorsGiveLineAndColumn) {
  EXPECT_EQ(errorOf("parallel:\n  parallel_mode: 2\n  search_mode: [a, b\n"),
            "run.yaml: line 4, column 1: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(errorOf("use_parallel: True\nparallel_config:\n  mem_coeff: 0.1\n bad: 1\n"),
            "run.yaml: line 4, column 2: YAML syntax error: end of map not found");
  EXPECT_EQ(errorOf("parallel:\n  parallel_mode: 2: 3\n"),
            "run.yaml: line 2, column 19: YAML syntax error: illegal map value");
}

TEST(MindFormersYaml, EveryStageNeedsAMicroBatch) {
  EXPECT_EQ(errorOf("parallel_config:\n  pipeline_stage: 4\n  micro_batch_num: 2\n"),
            "run.yaml: parallel_config.micro_batch_num: expected at least pipeline_stage (4), "
            "got 2 (every pipeline stage needs a micro-batch)");
  // With auto_pipeline the stage count is chosen later, within micro_batch_num.
  EXPECT_EQ(errorOf("parallel:\n  auto_pipeline: true\n"
                    "parallel_config:\n  pipeline_stage: 4\n  micro_batch_num: 2\n"),
            "<ok>");
}

TEST(MindFormersYaml, DeviceCountMustMatchTheLayoutInSemiAutoMode) {
  MindFormersConfig config = parsed(
      "parallel:\n  parallel_mode: 1\n"
      "parallel_config:\n  data_parallel: 2\n  model_parallel: 4\n  pipeline_stage: 2\n"
      "  micro_batch_num: 2\n");
  EXPECT_TRUE(checkDeviceCount(config, 16));
  auto status = checkDeviceCount(config, 8);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message,
            "run.yaml: parallel_config: data_parallel 2 * model_parallel 4 * pipeline_stage 2 = "
            "16 devices, but the cluster has 8");
  config.parallel.parallelMode = ParallelMode::kAuto;
  EXPECT_TRUE(checkDeviceCount(config, 8));
}

TEST(MindFormersYaml, MissingFile) {
  auto config = loadMindFormersYaml("/nonexistent/run.yaml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().message, "/nonexistent/run.yaml: cannot open file for reading");
}

TEST(MindFormersYaml, ModeNames) {
  EXPECT_EQ(parallelModeName(ParallelMode::kDataParallel), "data_parallel");
  EXPECT_EQ(parallelModeName(ParallelMode::kSemiAuto), "semi_auto_parallel");
  EXPECT_EQ(parallelModeName(ParallelMode::kAuto), "auto_parallel");
  EXPECT_EQ(searchModeName(SearchMode::kShardingPropagation), "sharding_propagation");
}

}  // namespace
}  // namespace autopar::frontend
