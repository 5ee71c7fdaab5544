#pragma once
/// \file
/// Plan features that change a step's memory and time on top of its operator strategies (seeds
/// 001 and 004): optimizer parallel, recompute and communication fusion. Per-op and per-block
/// settings live in the graph (ir::Op::recompute, ir::Op::placement, ir::BlockSettings,
/// ir::Tensor::parallelOptimizer); these are the global switches.

#include <cstdint>
#include <string_view>

#include "ir/parallel_config.h"
#include "util/expected.h"

namespace autopar::cost {

/// Seed 004's enable_parallel_optimizer and parallel_optimizer_config.
struct OptimizerParallelOptions {
  bool enabled = false;
  /// Parameters whose per-device slice is at most this many KB stay unsharded.
  int64_t thresholdKb = 64;
  /// Accumulated gradients are sharded too (reduce-scattered every micro-batch).
  bool gradientAccumulationShard = false;
  /// Gradients add up over several micro-batches (a pipeline or gradient accumulation). Without
  /// accumulation there is no accumulation buffer for gradientAccumulationShard to shard: the
  /// backward of the forward's parameter all-gather reduce-scatters each gradient as it is made,
  /// so a sharded parameter's gradient is its slice either way (seed 001: the switch "saves one
  /// parameter-size of static memory", the accumulation buffer).
  bool accumulates = true;
  /// Data-parallel mode (seed 004's first table row): each device updates whole parameters,
  /// then broadcasts them, instead of storing parameters as minimal slices.
  bool groupUpdate = false;
  /// A parameter none of whose dims divides by its replica count is padded on its largest dim to
  /// equal slices, as Megatron-LM's distributed optimizer and DeepSpeed's ZeRO do (they flatten
  /// the parameters into one buffer cut in equal parts), instead of staying whole (MindSpore's
  /// rule).
  bool padToShard = false;
  /// With group update: Megatron-LM's distributed optimizer. Gradients are reduce-scattered to
  /// each device's slice (not all-reduced) and the updated slices all-gathered (not broadcast):
  /// half the bytes of all-reduce plus broadcast.
  bool distributedOptimizer = false;
  /// With the distributed optimizer: the gradients are all-reduced whole, not reduce-scattered,
  /// and each device's updated slice is gathered as before (DeepSpeed's ZeRO 1 under its
  /// pipeline engine and its BF16_Optimizer: ir::TrainingSetup::zeroAllReducesGradients).
  bool gradientsAllReduced = false;
};

/// Seed 001's recompute options.
struct RecomputeOptions {
  /// kSelective: Korthikanti et al. 2022's selective recompute, the attention core of every op
  /// kind ir::isAttentionCore names recomputed, keeping its inputs and output; kFull: every
  /// layer of a stack (a block tagged "<prefix>.<index>") recomputed from its input.
  ir::Recompute layers = ir::Recompute::kNone;
  /// Inside recomputed blocks, model-parallel communication is replayed in backward instead of
  /// keeping its output (MindSpore's default true).
  bool mpCommRecompute = true;
  /// Inside recomputed blocks, optimizer-parallel parameter all-gathers are replayed in backward
  /// instead of keeping the gathered parameter (MindSpore's default false).
  bool parallelOptimizerCommRecompute = false;
  /// A recomputed block's inputs are kept sliced over the devices that hold the same copy, and
  /// gathered again before the block runs again in backward (MindSpore's
  /// recompute_slice_activation; Megatron-LM's --distribute-saved-activations).
  bool sliceActivation = false;
  /// Every gathered optimizer-parallel parameter is freed after its forward use and gathered
  /// again for its backward use (ZeRO-3: DeepSpeed's pre-/post-forward and pre-/post-backward
  /// module hooks). A recomputed op's parameter is then gathered three times per micro-batch:
  /// forward, recomputed forward and backward; others twice.
  bool parallelOptimizerRegather = false;
  /// With parallelOptimizerRegather, the parameters outside the stack's layers and those of its
  /// last layer stay gathered from their forward to the end of their backward: FSDP2 does not
  /// reshard the root module after forward (torch/distributed/_composable/fsdp/_fsdp_state.py,
  /// _lazy_init), and torchtitan does not reshard the last transformer block
  /// (parallelize_llama.py, apply_fsdp: "FSDP would prefetch it immediately").
  bool rootStaysGathered = false;
  /// kSelective as PyTorch's per-op selective checkpointing runs it in torchtitan
  /// (torchtitan/models/llama/parallelize_llama.py, `_save_list` and `_custom_policy`): every
  /// layer of a stack is recomputed, except that the outputs of its attention core and of every
  /// other matmul (the 1st, 3rd, ... of the layer) are kept and not computed again. False:
  /// Korthikanti et al.'s selective recompute of the attention core alone (Megatron).
  bool selectiveOpPolicy = false;
  /// Under the per-op policy, an output the policy saves is kept only when the backward needs it
  /// (torch.compile: the partitioner saves what the backward graph uses); false: every saved
  /// op's output is kept (eager: checkpoint's caching dispatch mode caches every MUST_SAVE
  /// output for the recompute, torch/utils/checkpoint.py, _CachingTorchDispatchMode).
  bool policyKeepsOnlyRead = false;
};

enum class Bucketing {
  kNone,     ///< gradients synchronise after the backward pass, one collective per parameter
  kBySize,   ///< buckets of FusionOptions::bucketBytes in backward order (PyTorch DDP, Megatron)
  kByLayer,  ///< one bucket per block
};

/// Seed 004's set_comm_fusion, and automatic bucketing when no block has a fusion id.
struct FusionOptions {
  Bucketing bucketing = Bucketing::kNone;
  /// PyTorch DistributedDataParallel's default bucket_cap_mb of 25.
  int64_t bucketBytes = int64_t{25} << 20;
};

Expected<Bucketing> parseBucketing(std::string_view text);
std::string_view bucketingName(Bucketing bucketing);

}  // namespace autopar::cost
