#pragma once
/// \file
/// A decoder-only transformer (LLaMA, Qwen, Baichuan, GPT-3, PanGu-alpha) as an ir::Graph, one
/// training micro-batch: token embedding, `layers` pre-norm blocks, final norm, LM head and
/// cross-entropy loss.
///
/// One layer i (block tag "llm.layer.<i>"), with b = microBatch, s = seq, h = hidden,
/// d = hidden / heads:
///   layer<i>.attn_norm        RMSNorm/LayerNorm x [b,s,h]
///   layer<i>.attn.q_proj      MatMul [b,s,h] x [h, heads*d]   (+ q_proj.bias_add when biased)
///   layer<i>.attn.k_proj      MatMul [b,s,h] x [h, kvHeads*d] (+ k_proj.bias_add)
///   layer<i>.attn.v_proj      MatMul [b,s,h] x [h, kvHeads*d] (+ v_proj.bias_add)
///   layer<i>.attn.q_rotary    Rotary (position = kRotary only), and k_rotary
///   layer<i>.attn.flash_attention  FlashAttention, causal, GQA when kvHeads < heads
///   layer<i>.attn.o_proj      MatMul [b,s,heads*d] x [heads*d, h] (+ o_proj.bias_add)
///   layer<i>.attn.dropout     Dropout (hiddenDropout > 0 only)
///   layer<i>.attn.residual    Add
///   layer<i>.mlp_norm         RMSNorm/LayerNorm
///   SwiGLU: layer<i>.mlp.gate_proj, up_proj, act (SiLU of gate), mul (act * up), down_proj
///   GeLU:   layer<i>.mlp.fc1 (+ fc1.bias_add), act (GeLU), fc2 (+ fc2.bias_add)
///   layer<i>.mlp.dropout      Dropout (hiddenDropout > 0 only)
///   layer<i>.mlp.residual     Add
/// With experts (a mixture of experts, Mixtral; experts > 0) the MLP is instead, c = s*topK/E
/// slots per sample and expert (routing spread evenly over the experts):
///   layer<i>.moe.router       MatMul [b,s,h] x [h, E]: the router logits
///   layer<i>.moe.dispatch     MoEDispatch [b,s,h], logits -> [b, E, c, h]: each token copied to
///                             its topK experts
///   layer<i>.moe.experts.*    the MLP above with every linear a BatchMatMul over the experts:
///                             [b, E, c, in] x [E, in, out] (gate_proj, up_proj, act, mul,
///                             down_proj; fc1, act, fc2 for GeLU), no biases
///   layer<i>.moe.combine      MoECombine [b, E, c, h], logits -> [b,s,h]: each token's topK
///                             outputs weighted by the softmax of their logits
/// Every op's output tensor carries the op's name; a parameter is "<op>.weight" or "<op>.bias"
/// ("layer3.attn.q_proj.weight", "layer3.attn_norm.weight").
/// Around the layers: "embedding" (Gather of tokens [b,s] int32 from "embedding.weight" [v,h],
/// block "embedding"), "embedding.position_add" (learned positions only), then "final_norm",
/// "lm_head" and "loss" (CrossEntropy with labels [b,s] int32), all in block "head".
///
/// With a vision tower (Qwen2-VL, InternVL; vision.layers > 0), before the text:
///   "vit.patch_embed" (block "vit.embedding"): MatMul of pixels [b, P, patchInput] into
///   [b, P, hv]; `vision.layers` encoder layers "vit.layer<i>" (blocks "vit.layer.<i>"), built as
///   the LLM's layers but with LayerNorm, biased projections, a GeLU MLP and bidirectional
///   attention; then the merger (block "vit.merger"): "vit.merger.norm", "vit.merger.reshape" to
///   [b, P / merge^2, merge^2 hv], "vit.merger.fc1" (+ bias, GeLU) and "vit.merger.fc2" (+ bias)
///   to [b, P / merge^2, h]. Those image tokens are concatenated before the embedded text
///   ("embedding.merge_vision", block "embedding"): tokens are [b, s - P / merge^2], labels
///   [b, s]. The tower's linears are split Megatron-style over tp like the LLM's.
///
/// With `parallel` set, every op carries a Megatron-style shard annotation (MindFormers'
/// parallel_config with data_parallel = dp, model_parallel = tp). sp is the cut of the sequence
/// dim s: 1, or tp with sequenceParallel.
///   embedding (Gather)              ((tp,1), (dp,1))       vocab-parallel table
///   embedding.position_add          ((dp,sp,1), (sp,1))
///   norms                           ((dp,sp,1), (1,)) [, (1,) for LayerNorm's beta]
///   q/k/v, gate/up, fc1 (column)    ((dp,1,1), (1,tp))
///   their bias adds                 ((dp,1,tp), (tp,))
///   rotary, SiLU/GeLU               ((dp,1,tp))
///   mlp.mul                         ((dp,1,tp), (dp,1,tp))
///   flash_attention                 ((dp,1,tp), (dp,1,tp), (dp,1,tp))
///   o_proj, down_proj, fc2 (row)    ((dp,1,tp), (tp,1)), bias adds ((dp,sp,1), (1,))
///   attn/mlp dropouts               ((dp,sp,1))
///   residual adds                   ((dp,sp,1), (dp,sp,1))
///   lm_head                         ((dp,1,1), (1,tp)); tied (transposeB) ((dp,1,1), (tp,1))
///   loss                            ((dp,1,tp), (dp,1))
/// (embeddingTableWhole: the embedding's table (1,1); headVocab / lossVocab kWhole: the vocabulary
/// cut 1 instead of tp; kAllDevices: lm_head ((1,1,1), (1,n)), loss ((1,1,n), (1,1)) with n =
/// dp x cp x tp.)
///   moe.router                      ((dp,sp,1), (1,1))     each rank routes its own tokens
///   moe.dispatch                    ((dp,sp,1), (dp,sp,1)) -> slots (dp, 1, sp, 1)
///   moe.experts column linears      ((dp/ep,ep,1,1), (ep,1,tp))
///   moe.experts row linear          ((dp/ep,ep,1,tp), (ep,tp,1))
///   moe.experts act, mul            ((dp/ep,ep,1,tp)[, same])
///   moe.combine                     ((dp,1,sp,1), (dp,sp,1))
/// Expert parallelism (ep, Megatron-Core's --expert-model-parallel-size) is carved out of the
/// data-parallel ranks: the batch dim's dp cut becomes dp/ep on the batch times ep on the experts,
/// so the layout engine moves the dispatched tokens to their experts' ranks with an all-to-all
/// over ep (and gathers sp's share of the slots over tp), and back before the combine
/// (reduce-scattering the row-parallel partial sums over tp first). The experts' weights are
/// split over ep and tp and replicated over dp/ep, so their gradients are summed over dp/ep (the
/// expert-data-parallel group) and ZeRO shards their states over it.
/// With contextParallel = cp every activation's sequence dim is also cut by cp (the hidden state's
/// by cp x sp), the embedding's tokens and the loss's labels too; attention takes its keys and
/// values whole along the sequence, ((dp,cp,tp), (dp,1,tp), (dp,1,tp)), so the layout engine
/// all-gathers them over cp. The vision tower is not context-parallel.
/// Sequence parallelism (Korthikanti et al. 2022, Megatron-LM --sequence-parallel) thus only
/// changes the ops between the tensor-parallel regions; the layout engine then turns the all-reduce
/// after each row-parallel matmul into a reduce-scatter along s, and gathers s before each
/// column-parallel matmul. Example, tp = 4, x [b,s,h]:
///   without: o_proj partial sums --all-reduce--> residual (1,1,1) --> mlp_norm --> fc1
///   with:    o_proj partial sums --reduce-scatter s--> residual (1,4,1) --> mlp_norm (1,4,1)
///            --all-gather s--> fc1
/// Both move the same bytes; the norms, dropouts and residuals then hold 1/tp of their activations.
/// Each tp rank now sees only its part of s, so the gradients of the norm weights and of the
/// row-parallel biases are summed over tp (a small all-reduce each, as in Megatron-LM).

#include <cstdint>
#include <optional>
#include <string>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/parallel_config.h"
#include "util/expected.h"

namespace autopar::frontend {

using ir::AttentionKernel;

struct TransformerConfig {
  enum class Mlp { kSwiGLU, kGeLU };
  enum class Norm { kRMSNorm, kLayerNorm };
  /// How positions enter the model: rotary on q and k (LLaMA, Qwen, Baichuan2-7B), a learned
  /// table [seq, h] added after the token embedding (GPT-3, PanGu-alpha), or ALiBi
  /// (Baichuan2-13B), a bias inside attention that has no parameters and no separate op here.
  enum class Position { kRotary, kLearned, kAlibi };

  std::string name = "transformer";
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kvHeads = 0;  ///< key/value heads (GQA); equal to heads for multi-head attention
  int64_t ffn = 0;      ///< MLP intermediate size
  int64_t vocab = 0;
  int64_t seq = 0;
  int64_t microBatch = 1;
  Mlp mlp = Mlp::kSwiGLU;
  Norm norm = Norm::kRMSNorm;
  Position position = Position::kRotary;
  bool tiedEmbeddings = false;  ///< the LM head reuses embedding.weight (MatMul, transposeB)
  /// How an annotation splits the vocabulary of the LM head and of the loss: as the model code of
  /// the framework that runs it shards them (MindFormers' families differ:
  /// frontend::applyMindFormersVocabSplits).
  enum class VocabSplit {
    kByTp,   ///< the batch by dp, the vocabulary by tp (Megatron's ColumnParallelLinear and
             ///< vocab-parallel cross entropy)
    kWhole,  ///< the batch by dp, the vocabulary whole on every device (MindFormers' vocab_emb_dp)
    /// The vocabulary over every device of the stage (dp x cp x tp), each reading the whole batch
    /// (MindFormers' Qwen and Baichuan2 heads and their loss_parallel_config)
    kAllDevices,
  };
  VocabSplit headVocab = VocabSplit::kByTp;
  VocabSplit lossVocab = VocabSplit::kByTp;
  /// The embedding table whole on every device, its gradient summed over dp (MindFormers'
  /// vocab_emb_dp); false: its rows split by tp.
  bool embeddingTableWhole = false;
  /// Which ops `parallel` annotates: every op (semi-auto), or only those MindFormers 1.2's LLaMA
  /// code still shards in auto-parallel mode with sharding_propagation, its key operators: the
  /// attention's q/k/v/o projections (and their biases), flash attention and the loss. The rest is
  /// left to propagation.
  enum class Annotated { kEveryOp, kMindFormersKeyOps };
  Annotated annotated = Annotated::kEveryOp;
  bool qkvBias = false;     ///< biases on q/k/v only (Qwen)
  bool linearBias = false;  ///< biases on every projection: q/k/v/o and fc1/fc2 (GPT-3)
  double normEpsilon = 1e-5;
  /// The rotary base (Hugging Face's rope_theta, MindFormers' theta, Megatron-LM's
  /// --rotary-base): 10,000 for LLaMA 2, 500,000 for Llama 3, 1,000,000 for Qwen2 and Mixtral.
  double ropeBase = 10000;
  /// How rotary positions stretch past the trained length (Hugging Face's rope_scaling): none,
  /// Llama 3.1's frequency-band rescaling ("llama3"), a linear interpolation of positions
  /// ("linear"), or another kind that Megatron-LM's GPT does not build (kept by name).
  struct RopeScaling {
    std::string type;  ///< "": none
    double factor = 1;
    double lowFrequencyFactor = 1;     ///< llama3: low_freq_factor
    double highFrequencyFactor = 4;    ///< llama3: high_freq_factor
    int64_t originalPositions = 8192;  ///< llama3: original_max_position_embeddings
    bool operator==(const RopeScaling&) const = default;
  };
  RopeScaling ropeScaling;
  /// Dropout rate on the attention and MLP outputs before each residual add (Megatron-LM's
  /// hidden_dropout); 0 adds no Dropout ops.
  double hiddenDropout = 0.0;
  /// The kernel that runs the attention core (a framework profile's, cost/framework.h).
  AttentionKernel attention = AttentionKernel::kFlash;
  /// The kernel that runs the loss (ir::LossKernel).
  ir::LossKernel loss = ir::LossKernel::kFp32;
  /// The compute type; fp8 is Transformer Engine's recipe: the layers' linear GEMMs in fp8, every
  /// tensor stored in bf16 and communicated in bf16 except the gathers next to those GEMMs, which
  /// move their fp8 casts (cost/graph_cost_edges.cc).
  ir::DType dtype = ir::DType::kBF16;
  /// A vision tower whose image tokens precede the text (multimodal models).
  struct Vision {
    int64_t layers = 0;  ///< 0: text only
    int64_t hidden = 0;
    int64_t heads = 0;
    int64_t ffn = 0;
    int64_t patches = 0;     ///< patch tokens per sample
    int64_t patchInput = 0;  ///< features of one patch: channels x frames x patch x patch
    int64_t merge = 1;       ///< merge x merge neighbouring patches make one LLM token
    bool operator==(const Vision&) const = default;
  };
  Vision vision;
  /// A mixture of experts in every LLM layer (Mixtral, Megatron-LM --num-experts): `experts`
  /// expert MLPs of width ffn, each token routed to `topK` of them (--moe-router-topk). 0: a dense
  /// MLP. seq x topK must divide by experts (the even spread the graph assumes).
  int64_t experts = 0;
  int64_t topK = 0;
  /// How the ops are annotated, Megatron-style as MindFormers' parallel_config does (semi-auto):
  /// tp cuts the heads, key/value heads, MLP width and vocabulary (with sequenceParallel also the
  /// sequence of the norms, dropouts and residual adds); dp cuts the batch (microBatch divides by
  /// it); cp cuts every LLM activation's sequence, the keys and values gathered for attention
  /// (ring attention's traffic); ep splits the experts over ep of the dp ranks (Megatron-Core).
  /// The rest of the configuration (pp, vpp, mbs, schedule, recompute, zero) is the layer-level
  /// plan's and not read here. Unset: no annotations; an op-level search chooses every strategy.
  std::optional<ir::ParallelConfig> parallel;

  /// The annotation's degrees; all 1 without one.
  [[nodiscard]] ir::ParallelConfig degrees() const {
    return parallel.value_or(ir::ParallelConfig{});
  }
};

/// The extents tensor parallelism cuts, by field name: the heads, key/value heads, MLP width and
/// vocabulary, and with a vision tower its heads and MLP width. TP must divide each; the
/// builder's checks (validateTransformer) and the hybrid search's shapes both read this list.
///   LLaMA2-70B: heads 64, kvHeads 8, ffn 28672, vocab 32000
std::vector<std::pair<std::string, int64_t>> tensorParallelExtents(const TransformerConfig& config);

/// Checks a config; errors name the config and the field:
///   "llama2-7b: kvHeads: heads 32 is not divisible by kvHeads 5"
///   "llama2-7b: vocab: 32001 is not divisible by tensorParallel 8"
///   "gpt3-175b: seq: 2050 is not divisible by tensorParallel 8 (sequenceParallel)"
///   "mixtral-8x7b: expertParallel: 3 does not divide the 8 experts"
Status validateTransformerConfig(const TransformerConfig& config);

/// Builds the training graph of one micro-batch. Parameter count follows the architecture
/// exactly: LLaMA2-7B (32 layers, h 4096, ffn 11008, vocab 32000, untied) gives 6,738,415,616.
Expected<ir::Graph> buildTransformer(const TransformerConfig& config);

/// Parameters of the config without building the graph (same count as parameterCount() of the
/// built graph): embeddings, per layer attention + MLP (or router and experts) + norms (+ biases),
/// final norm, head, and the vision tower's patch embedding, layers and merger. Mixtral-8x7B
/// gives 46,702,792,704.
int64_t transformerParameterCount(const TransformerConfig& config);

/// The parameters one token uses: the count above with only topK of each layer's experts
/// (Mixtral-8x7B: 12,879,925,248 of its 46.7 billion). Equal to the count for dense models.
int64_t activeParameterCount(const TransformerConfig& config);

}  // namespace autopar::frontend
