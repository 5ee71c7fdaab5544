#include "ir/setting.h"

#include <array>
#include <utility>

namespace autopar::ir {

namespace {

using Named = std::pair<Setting, std::string_view>;

constexpr std::array kNames{
    Named{Setting::kModel, "model"},
    Named{Setting::kConfig, "config"},
    Named{Setting::kNodes, "nodes"},
    Named{Setting::kDevicesPerNode, "devices-per-node"},
    Named{Setting::kAllowIdle, "allow-idle"},
    Named{Setting::kNnodes, "nnodes"},
    Named{Setting::kNprocPerNode, "nproc-per-node"},
    Named{Setting::kFramework, "framework"},
    Named{Setting::kPrecision, "precision"},
    Named{Setting::kTp, "tp"},
    Named{Setting::kPp, "pp"},
    Named{Setting::kDp, "dp"},
    Named{Setting::kVpp, "vpp"},
    Named{Setting::kCp, "cp"},
    Named{Setting::kEp, "ep"},
    Named{Setting::kMbs, "mbs"},
    Named{Setting::kGbs, "gbs"},
    Named{Setting::kZero, "zero"},
    Named{Setting::kZeroBubble, "zero-bubble"},
    Named{Setting::kSequenceParallel, "sequence-parallel"},
    Named{Setting::kFp8ParamGather, "fp8-param-gather"},
    Named{Setting::kRecompute, "recompute"},
    Named{Setting::kLlmLayers, "llm-layers"},
    Named{Setting::kVitLayers, "vit-layers"},
    Named{Setting::kLlmRecompute, "llm-recompute"},
    Named{Setting::kVitRecompute, "vit-recompute"},
    Named{Setting::kPlace, "place"},
    Named{Setting::kProfile, "profile"},
    Named{Setting::kClosedForm, "closed-form"},
    Named{Setting::kPipelineStages, "pipeline-stages"},
    Named{Setting::kMicroBatch, "micro-batch"},
    Named{Setting::kMicroBatches, "micro-batches"},
    Named{Setting::kDpShares, "dp-shares"},
    Named{Setting::kSchedule, "schedule"},
    Named{Setting::kVirtualStages, "virtual-stages"},
    Named{Setting::kMpCommRecompute, "no-mp-comm-recompute"},
    Named{Setting::kParallelOptimizerCommRecompute, "parallel-optimizer-comm-recompute"},
    Named{Setting::kRecomputeSliceActivation, "recompute-slice-activation"},
    Named{Setting::kOptimizerParallel, "optimizer-parallel"},
    Named{Setting::kOptimizerThreshold, "optimizer-threshold"},
    Named{Setting::kGradientAccumulationShard, "gradient-accumulation-shard"},
    Named{Setting::kAllToAll, "alltoall"},
    Named{Setting::kSearch, "search"},
    Named{Setting::kOpSearch, "op-search"},
    Named{Setting::kMemCoeff, "mem-coeff"},
    Named{Setting::kStrategyFile, "strategy-file"},
    Named{Setting::kMindsporeStrategy, "mindspore-strategy"},
    Named{Setting::kStage, "stage"},
    Named{Setting::kChunk, "chunk"},
    Named{Setting::kCommFusion, "comm-fusion"},
    Named{Setting::kRecomputeBlock, "recompute-block"},
    Named{Setting::kManualSplit, "manual-split"},
    Named{Setting::kRecomputeOp, "recompute-op"},
    Named{Setting::kHostOp, "host-op"},
    Named{Setting::kFit, "fit"},
};
static_assert(kNames.size() == static_cast<size_t>(Setting::kFit) + 1, "a setting without a name");

}  // namespace

std::string_view settingName(Setting setting) {
  // The table is in enum order (ir/setting_test.cc checks it), so the setting is its index.
  return kNames[static_cast<size_t>(setting)].second;
}

std::optional<Setting> settingNamed(std::string_view name) {
  for (const auto& [setting, spelt] : kNames) {
    if (spelt == name) return setting;
  }
  return std::nullopt;
}

std::string flag(Setting setting) { return fmt::format("--{}", settingName(setting)); }

}  // namespace autopar::ir
