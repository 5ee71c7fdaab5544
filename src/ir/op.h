#pragma once
/// \file
/// An operator node: kind, attributes, inputs and outputs, block tag and an optional user shard
/// annotation in the seeds' strategy notation.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/op_kind.h"
#include "ir/tensor.h"

namespace autopar::ir {

/// The kernel that runs the attention core. All run the same math at different speeds and
/// memory: the fused kernels keep the score matrix on chip; each generation of them reaches a
/// larger share of the device's peak (docs/frameworks.md).
enum class AttentionKernel : uint8_t {
  kFlash,  ///< FlashAttention-2's kernel, as PyTorch's scaled_dot_product_attention runs it
  /// FlashAttention's first generation (OpAttrs::flash1Kernel): flash-attn 1.x's CUDA kernel and
  /// the Triton kernel of the same algorithm (flash_attn_triton.py), which llm-foundry's MPT ran
  /// as `attn_impl: triton` because it takes an additive bias (ALiBi).
  kFlash1,
  kCudnn,  ///< cuDNN's fused attention, as Transformer Engine runs it (OpAttrs::cudnnKernel)
  /// The score matrix computed and kept in memory, as Megatron-LM's CoreAttention ran attention
  /// until 2023 (OpAttrs::scoresInMemory).
  kUnfused,
};

/// The kernel that runs the loss (CrossEntropy) over the logits.
enum class LossKernel : uint8_t {
  /// An fp32 copy of the logits, kept as the softmax: PyTorch's F.cross_entropy(logits.float())
  /// (torchtitan, Hugging Face models), Megatron's vocab-parallel cross entropy.
  kFp32,
  /// One kernel over the logits in their own dtype (OpAttrs::fusedLoss): flash-attn's
  /// cross_entropy (flash_attn/losses/cross_entropy.py), which llm-foundry's MPT runs by default
  /// (llmfoundry/models/mpt/modeling_mpt.py, loss_fn: fused_crossentropy). It keeps the logits
  /// and a per-token log-sum-exp and writes the gradient in the logits' dtype.
  kFused,
  /// The head's GEMM and the loss run chunk by chunk along the tokens, each chunk's logits made,
  /// reduced and differentiated before the next (OpAttrs::lossChunks): torchtitan's
  /// ChunkedLossWrapper (torchtitan/components/loss.py, 8 chunks by default, PyTorch's
  /// F.cross_entropy(logits.float()) on each), Liger's fused linear cross entropy. The whole
  /// logits never exist; nothing of them is kept for the backward.
  kChunked,
};

/// Attributes of all op kinds in one plain struct; each kind reads only the fields its comment in
/// op_kind.h names. Defaults are the common case.
struct OpAttrs {
  bool transposeA = false;      ///< MatMul/BatchMatMul: use A^T (last two dims swapped)
  bool transposeB = false;      ///< MatMul/BatchMatMul: use B^T
  std::vector<int64_t> axes;    ///< Reduce: axes reduced (negative counts from the end)
  bool keepDims = false;        ///< Reduce
  std::vector<int64_t> perm;    ///< Transpose
  Shape newShape;               ///< Reshape; one entry may be -1
  int64_t axis = -1;            ///< Softmax (default last), Concat
  std::vector<int64_t> starts;  ///< Slice: per-dim start (inclusive)
  std::vector<int64_t> ends;    ///< Slice: per-dim end (exclusive)
  int64_t numHeads = 0;         ///< FlashAttention, Rotary
  int64_t numKvHeads = 0;       ///< FlashAttention (GQA); 0 means numHeads
  bool causal = true;           ///< FlashAttention
  /// FlashAttention: run as attention did before FlashAttention (Megatron-LM's CoreAttention):
  /// the full score matrix computed and written to memory, softmaxed and dropped out there,
  /// then read back (ir/ops/attention.cc).
  bool scoresInMemory = false;
  /// FlashAttention: run by cuDNN's fused attention, as Transformer Engine runs it (on Hopper
  /// the FlashAttention-3 design: warp-specialised wgmma and TMA), priced at its own efficiency
  /// (cost::CostConstants::cudnnAttentionEfficiency); false: FlashAttention-2's kernel, which
  /// PyTorch's scaled_dot_product_attention runs.
  bool cudnnKernel = false;
  /// FlashAttention: run by FlashAttention's first generation (AttentionKernel::kFlash1), at
  /// FlashAttention-2's efficiency times cost::CostConstants::flash1AttentionSpeed.
  bool flash1Kernel = false;
  /// CrossEntropy: run by one kernel over the logits in their own dtype (LossKernel::kFused);
  /// false: over an fp32 copy kept as the softmax.
  bool fusedLoss = false;
  /// CrossEntropy: the logits made and reduced in this many chunks of tokens, each chunk's
  /// gradient taken at once (LossKernel::kChunked); 0: over the whole logits.
  int64_t lossChunks = 0;
  /// MatMul/BatchMatMul: a GEMM run in fp8 as Transformer Engine runs the linear layers (E4M3
  /// forward, E5M2 gradients, delayed scaling): at the fp8 peak, each operand cast to fp8 by a
  /// kernel of its own; the tensors themselves stay in their dtype (cost/op_cost.cc).
  bool fp8 = false;
  DType castTo = DType::kF32;  ///< Cast
  double dropoutRate = 0.0;    ///< Dropout
  double epsilon = 1e-5;       ///< LayerNorm/RMSNorm
  int64_t topK = 0;            ///< MoEDispatch/MoECombine: experts each token is routed to
  /// Gather: sizes of the parts input 0's dim 0 is split into, one per cut (seed 001's
  /// manual_split, e.g. (10, 20, 30, 4)); empty for an even split. The parts must sum to dim 0.
  std::vector<int64_t> manualSplit;
  /// Opaque: the name the source gives the op ("TopK", "com.microsoft.FusedGemm"), for reports
  /// and errors.
  std::string opaqueType;
  /// Opaque: the type of each output. autopar cannot infer them, so they come with the op (an
  /// ONNX model's value_info or ONNX shape inference); inferOutputTypes returns them.
  std::vector<TensorType> outputTypes;

  bool operator==(const OpAttrs&) const = default;
};

/// Cut counts per input per dimension, the seeds' notation: MatMul ((2,1),(1,4)) cuts X's rows in
/// two and W's columns in four.
using StrategyCuts = std::vector<std::vector<int64_t>>;

/// Where an op runs: on the accelerator, or on the host CPU with its parameters in host memory
/// (seed 001's primitive_target "CPU" for a large EmbeddingLookUp).
enum class Placement { kDevice, kHost };

struct Op {
  OpId id = -1;
  std::string name;
  OpKind kind = OpKind::kAdd;
  OpAttrs attrs;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  /// Block tag, e.g. "llm.layer.12", "vit.layer.3", "embedding", "head"; empty when untagged.
  std::string block;
  /// A user shard annotation (semi-auto parallel); empty when the search decides.
  StrategyCuts shard;
  /// Seed 001's primitive recompute: the output is not kept for backward but computed again.
  bool recompute = false;
  Placement placement = Placement::kDevice;
};

}  // namespace autopar::ir
