#pragma once
/// \file
/// Measured block tables (seed 003's black-box profiling; format in docs/profile-table.md): per
/// block setting (TP, CP, SP, micro-batch size, recompute), one layer of each stack and the two
/// ends' forward and backward seconds and activation bytes, measured on a small sampling cluster.
/// The block profiler (planner/configuration/block_profile.h) takes these in place of its analytic
/// probes' times and activations; parameter, gradient and optimizer bytes stay analytic.
///
/// Blocks measured on the sampling cluster carry over to the target as they are: their tensor-
/// and context-parallel collectives ran inside a node there and do inside a node on the target,
/// so every entry's TP x CP must fit in one sampling node (--nproc-per-node). Data- and
/// pipeline-parallel traffic comes from the target cluster's model.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/parallel_config.h"
#include "util/expected.h"

namespace autopar::planner {

/// One measured part for one micro-batch on one device.
struct MeasuredPart {
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  int64_t activationBytes = 0;
  /// Measured under full recompute (optional): the backward's extra time and what stays kept.
  std::optional<double> recomputeSeconds;
  std::optional<int64_t> recomputedActivationBytes;
};

struct MeasuredBlocks {
  std::map<std::string, MeasuredPart> layers;  ///< per stack: "llm", "vit"
  std::optional<MeasuredPart> first;           ///< embedding (and patch embedding, merger)
  std::optional<MeasuredPart> last;            ///< head
};

/// What a block's costs depend on: (TP, CP, EP, sequence parallel, micro-batch size, recompute).
/// Tables measure EP 1 (the runtime does not run experts); settings with expert parallelism keep
/// their analytic blocks.
struct BlockSetting {
  int64_t tp = 1;
  int64_t cp = 1;
  int64_t ep = 1;
  bool sequenceParallel = false;
  int64_t mbs = 1;
  ir::Recompute recompute = ir::Recompute::kNone;  ///< none or selective; full is per layer
  /// The configuration runs DeepSpeed's BF16_Optimizer (ir::TrainingSetup::bf16OptimizerRuns),
  /// whose gradients the blocks' state and backward include; a measured table does not say.
  bool bf16Optimizer = false;
  auto operator<=>(const BlockSetting&) const = default;
};

struct ProfileTable {
  std::string device;  ///< the device the blocks ran on; must match the target's
  int nnodes = 1;      ///< the sampling cluster
  int nprocPerNode = 0;
  std::map<BlockSetting, MeasuredBlocks> entries;
};

/// One run of the model on ranks as `autopar profile` measured it (medians over its steps): the
/// step's forward and backward, the activations kept, and the forward and kept bytes of the
/// embedding (first), the layers and the head (last).
struct SampledRun {
  struct Part {
    double forwardSeconds = 0;
    int64_t keptBytes = 0;
  };
  double forward = 0;
  double backward = 0;
  double activation = 0;
  Part first;
  Part layers;
  Part last;
};

/// Seed 003's block sampling: one layer's and the ends' costs from a 2-layer run and a run with
/// `extraLayers` more.
MeasuredBlocks differenceRuns(const SampledRun& two, const SampledRun& four, int64_t extraLayers);

/// The table as the reader reads it (keys in the documented order); `model` says what was
/// measured.
std::string profileTableToJson(const ProfileTable& table, const std::string& model);

/// Reads a table measured on `device` (the target cluster's device: block times do not carry
/// across devices); `nnodes` and `nprocPerNode` (> 0) override the file's sampling cluster.
/// Errors name the file, the entry and the field.
Expected<ProfileTable> readProfileTable(const std::string& path, const std::string& device,
                                        int nnodes = 0, int nprocPerNode = 0);

/// Parses table JSON text as readProfileTable does; `sourceName` prefixes every error.
Expected<ProfileTable> parseProfileTable(const std::string& text, const std::string& sourceName,
                                         const std::string& device, int nnodes = 0,
                                         int nprocPerNode = 0);

}  // namespace autopar::planner
