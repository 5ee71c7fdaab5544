#pragma once
/// \file
/// MindFormers-style run yamls (`--config run.yaml`): the parallel settings of seed 000 (MindSpore
/// auto-parallel as MindFormers configures it), the batch size and, optionally, the model's
/// dimensions. docs/mindformers-yaml.md lists every key with its default.
///
/// Example (seed 000's snippet plus a model):
///   use_parallel: True
///   parallel:
///     parallel_mode: 2
///     search_mode: "recursive_programming"
///     auto_pipeline: True
///   parallel_config:
///     mem_coeff: 0.1
///   runner_config:
///     batch_size: 1
///   model:
///     model_config:
///       model_preset: llama2-7b
///       seq_length: 2048
/// reads as parallelMode kAuto, searchMode kRecursiveProgramming, autoPipeline true, memCoeff 0.1,
/// batchSize 1 and LLaMA2-7B with seq 2048.
///
/// Keys MindFormers uses for other things (optimizer, callbacks, context, ...) are ignored; a
/// known key with a value of the wrong type is an error, one line naming the file and key path:
///   "run.yaml: parallel_config.mem_coeff: expected a positive number, got 'abc'"
///   "run.yaml: parallel.parallel_mode: expected 0, 1 or 2, got 5"
///   "run.yaml: line 7, column 12: YAML syntax error: illegal map value"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "frontend/transformer.h"
#include "util/expected.h"

namespace autopar::frontend {

/// `parallel.parallel_mode`, MindFormers' integer codes (3, hybrid parallel, is not supported).
enum class ParallelMode {
  kDataParallel = 0,  ///< every op splits its batch axis over all devices
  kSemiAuto = 1,      ///< every op carries a strategy (here: Megatron-style from parallel_config)
  kAuto = 2,          ///< the search decides (search_mode)
};

/// `parallel.search_mode`.
enum class SearchMode {
  kRecursiveProgramming,  ///< "recursive_programming": double-recursive (SAPP), no annotations
  kShardingPropagation,   ///< "sharding_propagation": spreads a few annotations to every op
};

/// "data_parallel", "semi_auto_parallel", "auto_parallel" (MindSpore's parallel_mode strings).
std::string_view parallelModeName(ParallelMode mode);
/// "recursive_programming", "sharding_propagation".
std::string_view searchModeName(SearchMode mode);

/// How mem_coeff is set: the number given, or chosen by planning seed 000's ladder of rungs
/// (planner/mem_coeff_auto.h).
enum class MemCoeffRule {
  kGiven,
  kAuto,     ///< `auto`: the smallest rung whose plan fits
  kFastest,  ///< `fastest`: the rung whose plan, among those that fit, is fastest
};

/// "auto", "fastest", or empty for a number.
std::string_view memCoeffRuleName(MemCoeffRule rule);

/// The parallel keys of a run yaml; defaults are MindSpore's / MindFormers' (see the doc page).
struct ParallelSettings {
  /// use_parallel; unset when not given. False: every device data parallel (planner).
  std::optional<bool> useParallel;
  ParallelMode parallelMode = ParallelMode::kSemiAuto;        ///< parallel.parallel_mode
  SearchMode searchMode = SearchMode::kRecursiveProgramming;  ///< parallel.search_mode
  bool autoPipeline = false;                                  ///< parallel.auto_pipeline
  bool fullBatch = false;                                     ///< parallel.full_batch
  std::optional<bool> enableParallelOptimizer;       ///< parallel.enable_parallel_optimizer
  double memCoeff = 0.1;                             ///< parallel_config.mem_coeff
  MemCoeffRule memCoeffRule = MemCoeffRule::kGiven;  ///< mem_coeff: auto or fastest
  int64_t dataParallel = 1;                          ///< parallel_config.data_parallel
  int64_t modelParallel = 1;                         ///< parallel_config.model_parallel
  int64_t pipelineStage = 1;                         ///< parallel_config.pipeline_stage
  int64_t microBatchNum = 1;                         ///< parallel_config.micro_batch_num
  /// parallel_config.micro_batch_interleave_num, or MindFormers' top-level key of that name.
  int64_t microBatchInterleaveNum = 1;
  /// parallel_config.gradient_accumulation_steps, or runner_config.gradient_accumulation_steps.
  int64_t gradientAccumulationSteps = 1;
  bool useSeqParallel = false;  ///< parallel_config.use_seq_parallel
  /// parallel_config.vocab_emb_dp: the embedding table (and, as the model family's code decides,
  /// the LM head) whole on every device. MindFormers' default is True.
  bool vocabEmbDp = true;
  bool enableAllToAll = false;  ///< parallel.enable_alltoall
  /// parallel.parallel_optimizer_config.parallel_optimizer_threshold (KB) and
  /// .gradient_accumulation_shard.
  int64_t parallelOptimizerThresholdKb = 64;
  bool gradientAccumulationShard = false;
  bool recompute = false;                       ///< recompute_config.recompute (full)
  bool selectRecompute = false;                 ///< recompute_config.select_recompute
  bool mpCommRecompute = true;                  ///< recompute_config.mp_comm_recompute
  bool parallelOptimizerCommRecompute = false;  ///< .parallel_optimizer_comm_recompute
  bool recomputeSliceActivation = false;        ///< .recompute_slice_activation
  /// MindFormers' interleaved pipeline: parallel.pipeline_config.pipeline_interleave with
  /// model.model_config.pp_interleave_num chunks per stage (1: not interleaved).
  int64_t ppInterleaveNum = 1;
};

struct MindFormersConfig {
  std::string sourceName;  ///< the path or name errors were prefixed with
  ParallelSettings parallel;
  /// runner_config.batch_size (MindFormers' place) or top-level batch_size: samples per device
  /// (full_batch false) or per data-parallel group (full_batch true) per micro-step.
  int64_t batchSize = 1;
  /// The model under `model.model_config`, when it names a preset or gives dimensions;
  /// microBatch is left at 1 and no annotations are set (the caller decides both).
  std::optional<TransformerConfig> model;
  /// `context.max_device_memory` ("59GB"; MindSpore reads GB as GiB): the device memory MindSpore
  /// may use, its pool's size. Unset when not given.
  std::optional<int64_t> maxDeviceMemoryBytes;
  /// `model.arch.type`, the MindFormers class that runs the model (its family's code path).
  std::optional<std::string> archType;
  /// The top-level `framework` key, autopar's (not MindFormers'): the framework whose code path
  /// the plan is priced for (cost/framework.h checks the name); unset when absent.
  std::optional<std::string> framework;
};

/// Parses yaml text; `sourceName` prefixes every error ("run.yaml: ...").
Expected<MindFormersConfig> parseMindFormersYaml(const std::string& text,
                                                 const std::string& sourceName);

/// Reads and parses a file; errors are prefixed with `path` as given.
Expected<MindFormersConfig> loadMindFormersYaml(const std::string& path);

/// Seed 000's global batch size. pipeline = pipeline_stage > 1 (with auto_pipeline, set
/// parallel.pipelineStage to the chosen stage count first):
///   no pipeline, not full_batch: batch_size * device_num * micro_batch_interleave_num *
///                                gradient_accumulation_steps
///   no pipeline, full_batch:     batch_size * data_parallel * micro_batch_interleave_num *
///                                gradient_accumulation_steps
///   pipeline, not full_batch:    batch_size * device_num * micro_batch_interleave_num *
///                                micro_batch_num
///   pipeline, full_batch:        batch_size * data_parallel * micro_batch_interleave_num *
///                                micro_batch_num
/// Example: batch_size 1, 8 devices, gradient_accumulation_steps 8, no pipeline, not full_batch
/// gives 1 * 8 * 1 * 8 = 64. `deviceNum` must be >= 1.
int64_t globalBatchSize(const MindFormersConfig& config, int64_t deviceNum);

/// The row of the table globalBatchSize used, e.g.
/// "batch_size * device_num * micro_batch_interleave_num * gradient_accumulation_steps".
std::string globalBatchSizeFormula(const MindFormersConfig& config);

/// The formula with its numbers, for reports: "global batch size = batch_size * device_num *
/// micro_batch_interleave_num * gradient_accumulation_steps = 1 * 8 * 1 * 8 = 64".
std::string globalBatchSizeReport(const MindFormersConfig& config, int64_t deviceNum);

/// Samples in one micro-batch of the whole cluster, the batch of the graph the planner shards:
/// the global batch divided by micro_batch_num (pipeline) or gradient_accumulation_steps.
/// Example: batch_size 2, full_batch, data_parallel 4, micro_batch_num 8, pipeline 2 -> 8.
int64_t clusterMicroBatchSize(const MindFormersConfig& config, int64_t deviceNum);

/// Whether the model code's shard() calls lay out the model by parallel_config's data_parallel
/// and model_parallel: every op in semi-auto mode, the key operators in auto mode with
/// sharding_propagation (TransformerConfig::Annotated).
bool shardsByLayout(const ParallelSettings& parallel);

/// Where parallel_config lays out the model (shardsByLayout): data_parallel * model_parallel *
/// pipeline_stage must equal the device count, e.g. "run.yaml: parallel_config: data_parallel 2
/// * model_parallel 4 * pipeline_stage 2 = 16 devices, but the cluster has 8". Other modes pass.
Status checkDeviceCount(const MindFormersConfig& config, int64_t deviceNum);

}  // namespace autopar::frontend
