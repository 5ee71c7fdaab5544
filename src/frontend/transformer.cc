#include "frontend/transformer.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "ir/op_kind.h"

namespace autopar::frontend {

using ir::OpKind;
using ir::TensorId;
using Config = TransformerConfig;

namespace {

constexpr TensorId kFailed = -1;

/// Megatron-LM's two ways of splitting a linear layer over tp devices (Shoeybi et al. 2019):
/// column-parallel splits the output features (no communication forward), row-parallel splits
/// the contracted input features (an all-reduce of partial sums after it).
enum class Parallel { kColumn, kRow };

/// The vision tower's layers as a transformer config of their own.
Config visionTower(const Config& config) {
  Config tower = config;
  tower.name = config.name + ".vision";
  tower.layers = config.vision.layers;
  tower.hidden = config.vision.hidden;
  tower.heads = config.vision.heads;
  tower.kvHeads = config.vision.heads;
  tower.ffn = config.vision.ffn;
  tower.seq = config.vision.patches;
  tower.mlp = Config::Mlp::kGeLU;
  tower.norm = Config::Norm::kLayerNorm;
  tower.linearBias = true;
  tower.qkvBias = true;
  tower.hiddenDropout = 0;
  tower.vision = {};
  tower.experts = 0;
  tower.topK = 0;
  return tower;
}

/// Builds the graph op by op. The first failure is kept in `error_` and every later call does
/// nothing, so the layer code reads as a straight list of ops; build() reports the failure.
class TransformerBuilder {
 public:
  explicit TransformerBuilder(const Config& config)
      : config_(config),
        vision_(visionTower(config)),
        tower_(&config_),
        graph_(config.name),
        annotate_(config.parallel.has_value()),
        dp_(config.degrees().dp),
        tp_(config.degrees().tp),
        sequenceCuts_(config.degrees().sequenceParallel ? tp_ : 1),
        cp_(config.degrees().cp),
        ep_(config.degrees().ep) {}

  Expected<ir::Graph> build();

 private:
  TensorId addInput(const std::string& name, ir::Shape shape, ir::DType dtype);
  TensorId addParameter(const std::string& name, ir::Shape shape);
  /// Adds an op whose single output tensor is named after the op.
  TensorId addOp(const std::string& name, OpKind kind, const std::vector<TensorId>& inputs,
                 ir::StrategyCuts cuts, const ir::OpAttrs& attrs = {});
  /// MatMul by "<name>.weight" [in, out], then "<name>.bias_add" when `bias`.
  TensorId linear(const std::string& name, TensorId input, int64_t inFeatures, int64_t outFeatures,
                  bool bias, Parallel parallel);
  TensorId norm(const std::string& name, TensorId input);
  /// "<name>" Dropout at the tower's hiddenDropout, or `input` itself when the rate is 0.
  TensorId hiddenDropout(const std::string& name, TensorId input);
  TensorId embedding(TensorId tokens);
  TensorId attention(const std::string& prefix, TensorId input);
  /// The tower's MLP on the hidden state, or with `experts` every expert's MLP on its slots
  /// [b, E, c, h] (linears by expertLinear).
  TensorId mlp(const std::string& prefix, TensorId input, bool experts = false);
  /// "<name>" BatchMatMul of slots [b, E, c, in] by "<name>.weight" [E, in, out], split over the
  /// experts by ep and Megatron-style by tp.
  TensorId expertLinear(const std::string& name, TensorId input, int64_t inFeatures,
                        int64_t outFeatures, Parallel parallel);
  /// The mixture of experts in place of the MLP: router, dispatch, experts, combine.
  TensorId moe(const std::string& prefix, TensorId input);
  /// Layer `index` of the current tower: block "<stack>.layer.<index>", ops "<ops><index>.*".
  TensorId layer(const std::string& stack, const std::string& ops, int64_t index, TensorId input);
  /// The vision tower and merger: image tokens [b, P / merge^2, h].
  TensorId visionTokens();
  void head(TensorId input, TensorId labels);

  /// The dtype tensors are stored and communicated in: fp8 training (Transformer Engine's
  /// recipe) keeps them in bf16 and runs only the linear layers' GEMMs in fp8 (gemmAttrs); the
  /// gathers next to those GEMMs move their fp8 casts (cost/graph_cost_edges.cc).
  [[nodiscard]] ir::DType storage() const {
    return config_.dtype == ir::DType::kFP8 ? ir::DType::kBF16 : config_.dtype;
  }
  /// The attributes of a transformer layer's linear GEMM: fp8 under fp8 training. The LM head,
  /// the router and the embedding stay in bf16, as Megatron-Core builds them outside
  /// Transformer Engine's modules.
  [[nodiscard]] ir::OpAttrs gemmAttrs() const {
    ir::OpAttrs attrs;
    attrs.fp8 = config_.dtype == ir::DType::kFP8;
    return attrs;
  }
  /// The annotation, or none when the config asks for no annotations.
  [[nodiscard]] ir::StrategyCuts cuts(ir::StrategyCuts annotation) const {
    return annotate_ ? std::move(annotation) : ir::StrategyCuts{};
  }
  /// Cuts of an activation [b, s, width] that is split on its last dim by tp, or not.
  [[nodiscard]] std::vector<int64_t> activation(bool tensorSplit) const {
    return {dp_, cp_, tensorSplit ? tp_ : 1};
  }
  /// For the LM head and the loss: the cuts of their [b, s, ...] input's leading dims, and the
  /// vocabulary's cut.
  [[nodiscard]] std::pair<std::vector<int64_t>, int64_t> vocabCuts(Config::VocabSplit split) const {
    switch (split) {
      case Config::VocabSplit::kWhole:
        return {activation(false), 1};
      case Config::VocabSplit::kAllDevices:
        return {{1, 1, 1}, dp_ * cp_ * tp_};
      case Config::VocabSplit::kByTp:
        break;
    }
    return {activation(false), tp_};
  }
  /// Cuts of the hidden state [b, s, h] between the tensor-parallel regions: replicated over tp,
  /// or split along s with sequence parallelism.
  [[nodiscard]] std::vector<int64_t> hiddenState() const { return {dp_, cp_ * sequenceCuts_, 1}; }
  /// Cuts of the dispatched slots [b, E, c, h] on the tokens' ranks: as the hidden state.
  [[nodiscard]] std::vector<int64_t> tokenSlots() const { return {dp_, 1, cp_ * sequenceCuts_, 1}; }
  /// Cuts of the slots [b, E, c, width] on the experts' ranks: the experts split by ep out of
  /// dp, the slots by cp (sp's share gathered), the width by tp or not.
  [[nodiscard]] std::vector<int64_t> expertSlots(bool tensorSplit) const {
    return {dp_ / ep_, ep_, cp_, tensorSplit ? tp_ : 1};
  }

  const Config& config_;
  /// The vision tower as a layer stack of its own: LayerNorm, biased linears, GeLU MLP.
  const Config vision_;
  /// The tower whose layers are being built (config_ or vision_).
  const Config* tower_;
  ir::Graph graph_;
  std::optional<Error> error_;
  std::string block_;
  bool annotate_;
  int64_t dp_;
  int64_t tp_;
  int64_t sequenceCuts_;  ///< tp with sequence parallelism, else 1
  int64_t cp_;            ///< context parallelism of the tower being built (the vision tower: 1)
  int64_t ep_;            ///< expert parallelism, out of dp_
};

TensorId TransformerBuilder::addInput(const std::string& name, ir::Shape shape, ir::DType dtype) {
  if (error_) return kFailed;
  auto id = graph_.addTensor(name, ir::TensorType{std::move(shape), dtype}, ir::TensorRole::kInput);
  if (!id) error_ = id.error();
  return id ? *id : kFailed;
}

TensorId TransformerBuilder::addParameter(const std::string& name, ir::Shape shape) {
  if (error_) return kFailed;
  auto id = graph_.addTensor(name, ir::TensorType{std::move(shape), storage()},
                             ir::TensorRole::kParameter);
  if (!id) error_ = id.error();
  return id ? *id : kFailed;
}

/// Config::Annotated::kMindFormersKeyOps: the ops MindFormers' LLaMA attention and loss shard
/// outside its sharding_propagation guards (llama_transformer.py, llama.py).
bool isMindFormersKeyOp(std::string_view name) {
  if (name == "loss") return true;
  for (std::string_view key :
       {".attn.q_proj", ".attn.k_proj", ".attn.v_proj", ".attn.o_proj", ".attn.flash_attention"}) {
    const auto at = name.find(key);
    if (at == std::string_view::npos) continue;
    const std::string_view rest = name.substr(at + key.size());
    if (rest.empty() || rest == ".bias_add") return true;
  }
  return false;
}

TensorId TransformerBuilder::addOp(const std::string& name, OpKind kind,
                                   const std::vector<TensorId>& inputs, ir::StrategyCuts cuts,
                                   const ir::OpAttrs& attrs) {
  if (error_) return kFailed;
  auto id = graph_.addOp(name, kind, attrs, inputs, {name}, block_);
  if (!id) {
    error_ = id.error();
    return kFailed;
  }
  if (config_.annotated == Config::Annotated::kEveryOp || isMindFormersKeyOp(name)) {
    graph_.mutableOp(*id).shard = std::move(cuts);
  }
  return graph_.op(*id).outputs.front();
}

TensorId TransformerBuilder::linear(const std::string& name, TensorId input, int64_t inFeatures,
                                    int64_t outFeatures, bool bias, Parallel parallel) {
  const bool column = parallel == Parallel::kColumn;
  TensorId weight = addParameter(name + ".weight", {inFeatures, outFeatures});
  // Column: X (dp,1,1) x W (1,tp) -> Y (dp,1,tp). Row: X (dp,1,tp) x W (tp,1) -> partial sums.
  ir::StrategyCuts matmulCuts = column ? ir::StrategyCuts{activation(false), {1, tp_}}
                                       : ir::StrategyCuts{activation(true), {tp_, 1}};
  TensorId output =
      addOp(name, OpKind::kMatMul, {input, weight}, cuts(std::move(matmulCuts)), gemmAttrs());
  if (!bias) return output;
  // The bias follows its matmul's output: split like the output features. After a row-parallel
  // matmul the sum is complete (all-reduced, or reduce-scattered along s with sequence
  // parallelism) and the bias add runs on the hidden state.
  TensorId biasWeight = addParameter(name + ".bias", {outFeatures});
  ir::StrategyCuts biasCuts =
      column ? ir::StrategyCuts{activation(true), {tp_}} : ir::StrategyCuts{hiddenState(), {1}};
  return addOp(name + ".bias_add", OpKind::kAdd, {output, biasWeight}, cuts(std::move(biasCuts)));
}

TensorId TransformerBuilder::norm(const std::string& name, TensorId input) {
  ir::OpAttrs attrs;
  attrs.epsilon = tower_->normEpsilon;
  TensorId gamma = addParameter(name + ".weight", {tower_->hidden});
  if (tower_->norm == Config::Norm::kRMSNorm) {
    return addOp(name, OpKind::kRMSNorm, {input, gamma}, cuts({hiddenState(), {1}}), attrs);
  }
  TensorId beta = addParameter(name + ".bias", {tower_->hidden});
  return addOp(name, OpKind::kLayerNorm, {input, gamma, beta}, cuts({hiddenState(), {1}, {1}}),
               attrs);
}

TensorId TransformerBuilder::hiddenDropout(const std::string& name, TensorId input) {
  if (tower_->hiddenDropout <= 0) return input;
  ir::OpAttrs attrs;
  attrs.dropoutRate = tower_->hiddenDropout;
  return addOp(name, OpKind::kDropout, {input}, cuts({hiddenState()}), attrs);
}

TensorId TransformerBuilder::embedding(TensorId tokens) {
  block_ = "embedding";
  TensorId table = addParameter("embedding.weight", {config_.vocab, config_.hidden});
  // Vocab-parallel embedding (MindFormers VocabEmbedding): the table's rows split by tp.
  TensorId embedded = addOp("embedding", OpKind::kGather, {table, tokens},
                            cuts({{config_.embeddingTableWhole ? 1 : tp_, 1}, {dp_, cp_}}));
  if (config_.position != Config::Position::kLearned) return embedded;
  // The table [s, h] broadcasts over the batch; its s is cut like the hidden state's.
  TensorId positions = addParameter("position_embedding.weight", {config_.seq, config_.hidden});
  return addOp("embedding.position_add", OpKind::kAdd, {embedded, positions},
               cuts({hiddenState(), {cp_ * sequenceCuts_, 1}}));
}

TensorId TransformerBuilder::attention(const std::string& prefix, TensorId input) {
  const Config& t = *tower_;
  const bool qkvBias = t.qkvBias || t.linearBias;
  const int64_t headDim = t.hidden / t.heads;
  const int64_t queryWidth = t.heads * headDim;
  const int64_t kvWidth = t.kvHeads * headDim;
  TensorId q = linear(prefix + ".q_proj", input, t.hidden, queryWidth, qkvBias, Parallel::kColumn);
  TensorId k = linear(prefix + ".k_proj", input, t.hidden, kvWidth, qkvBias, Parallel::kColumn);
  TensorId v = linear(prefix + ".v_proj", input, t.hidden, kvWidth, qkvBias, Parallel::kColumn);
  if (t.position == Config::Position::kRotary) {
    ir::OpAttrs queryHeads;
    queryHeads.numHeads = t.heads;
    ir::OpAttrs kvHeads;
    kvHeads.numHeads = t.kvHeads;
    q = addOp(prefix + ".q_rotary", OpKind::kRotary, {q}, cuts({activation(true)}), queryHeads);
    k = addOp(prefix + ".k_rotary", OpKind::kRotary, {k}, cuts({activation(true)}), kvHeads);
  }
  ir::OpAttrs attrs;
  attrs.numHeads = t.heads;
  attrs.numKvHeads = t.kvHeads;
  attrs.causal = tower_ == &config_;  // the vision tower attends both ways
  attrs.scoresInMemory = config_.attention == AttentionKernel::kUnfused;
  attrs.cudnnKernel = config_.attention == AttentionKernel::kCudnn;
  attrs.flash1Kernel = config_.attention == AttentionKernel::kFlash1;
  // Context parallelism cuts the queries' sequence; every query attends to all keys, so the keys
  // and values are gathered along the sequence (the traffic of ring attention).
  const std::vector<int64_t> keys{dp_, 1, tp_};
  TensorId context = addOp(prefix + ".flash_attention", OpKind::kFlashAttention, {q, k, v},
                           cuts({activation(true), keys, keys}), attrs);
  return linear(prefix + ".o_proj", context, queryWidth, t.hidden, t.linearBias, Parallel::kRow);
}

TensorId TransformerBuilder::mlp(const std::string& prefix, TensorId input, bool experts) {
  const int64_t hidden = tower_->hidden;
  const int64_t ffn = tower_->ffn;
  const bool bias = tower_->linearBias && !experts;
  const auto project = [&](const std::string& name, TensorId x, int64_t in, int64_t out,
                           Parallel parallel) {
    return experts ? expertLinear(name, x, in, out, parallel)
                   : linear(name, x, in, out, bias, parallel);
  };
  const std::vector<int64_t> split = experts ? expertSlots(true) : activation(true);
  if (tower_->mlp == Config::Mlp::kGeLU) {
    TensorId up = project(prefix + ".fc1", input, hidden, ffn, Parallel::kColumn);
    TensorId act = addOp(prefix + ".act", OpKind::kGeLU, {up}, cuts({split}));
    return project(prefix + ".fc2", act, ffn, hidden, Parallel::kRow);
  }
  TensorId gate = project(prefix + ".gate_proj", input, hidden, ffn, Parallel::kColumn);
  TensorId up = project(prefix + ".up_proj", input, hidden, ffn, Parallel::kColumn);
  TensorId act = addOp(prefix + ".act", OpKind::kSiLU, {gate}, cuts({split}));
  TensorId gated = addOp(prefix + ".mul", OpKind::kMul, {act, up}, cuts({split, split}));
  return project(prefix + ".down_proj", gated, ffn, hidden, Parallel::kRow);
}

TensorId TransformerBuilder::expertLinear(const std::string& name, TensorId input,
                                          int64_t inFeatures, int64_t outFeatures,
                                          Parallel parallel) {
  TensorId weight = addParameter(name + ".weight", {tower_->experts, inFeatures, outFeatures});
  // Column: slots (dp/ep,ep,1,1) x W (ep,1,tp). Row: slots (dp/ep,ep,1,tp) x W (ep,tp,1), which
  // leaves partial sums over tp.
  ir::StrategyCuts matmulCuts = parallel == Parallel::kColumn
                                    ? ir::StrategyCuts{expertSlots(false), {ep_, 1, tp_}}
                                    : ir::StrategyCuts{expertSlots(true), {ep_, tp_, 1}};
  return addOp(name, OpKind::kBatchMatMul, {input, weight}, cuts(std::move(matmulCuts)),
               gemmAttrs());
}

TensorId TransformerBuilder::moe(const std::string& prefix, TensorId input) {
  const Config& t = *tower_;
  // Each rank routes the tokens it holds (a sequence-parallel rank its share), with the router's
  // weight replicated.
  TensorId router = addParameter(prefix + ".router.weight", {t.hidden, t.experts});
  TensorId logits =
      addOp(prefix + ".router", OpKind::kMatMul, {input, router}, cuts({hiddenState(), {1, 1}}));
  ir::OpAttrs routing;
  routing.topK = t.topK;
  TensorId slots = addOp(prefix + ".dispatch", OpKind::kMoEDispatch, {input, logits},
                         cuts({hiddenState(), hiddenState()}), routing);
  TensorId outputs = mlp(prefix + ".experts", slots, /*experts=*/true);
  // The outputs go back to their tokens' ranks (the layout engine's all-to-all) and are summed
  // there, as Megatron-Core's dispatcher does.
  return addOp(prefix + ".combine", OpKind::kMoECombine, {outputs, logits},
               cuts({tokenSlots(), hiddenState()}), routing);
}

TensorId TransformerBuilder::layer(const std::string& stack, const std::string& ops, int64_t index,
                                   TensorId input) {
  block_ = fmt::format("{}.layer.{}", stack, index);
  const std::string prefix = fmt::format("{}{}", ops, index);
  const ir::StrategyCuts residualCuts = cuts({hiddenState(), hiddenState()});
  TensorId attnOut = attention(prefix + ".attn", norm(prefix + ".attn_norm", input));
  attnOut = hiddenDropout(prefix + ".attn.dropout", attnOut);
  TensorId hidden = addOp(prefix + ".attn.residual", OpKind::kAdd, {input, attnOut}, residualCuts);
  TensorId normed = norm(prefix + ".mlp_norm", hidden);
  TensorId mlpOut =
      tower_->experts > 0 ? moe(prefix + ".moe", normed) : mlp(prefix + ".mlp", normed);
  mlpOut = hiddenDropout(prefix + ".mlp.dropout", mlpOut);
  return addOp(prefix + ".mlp.residual", OpKind::kAdd, {hidden, mlpOut}, residualCuts);
}

void TransformerBuilder::head(TensorId input, TensorId labels) {
  block_ = "head";
  TensorId normed = norm("final_norm", input);
  TensorId logits = kFailed;
  const auto [headInput, vocab] = vocabCuts(config_.headVocab);
  if (config_.tiedEmbeddings) {
    // The embedding table [v, h] read transposed.
    ir::OpAttrs attrs;
    attrs.transposeB = true;
    TensorId table = graph_.findTensor("embedding.weight").value_or(kFailed);
    logits =
        addOp("lm_head", OpKind::kMatMul, {normed, table}, cuts({headInput, {vocab, 1}}), attrs);
  } else {
    TensorId weight = addParameter("lm_head.weight", {config_.hidden, config_.vocab});
    logits = addOp("lm_head", OpKind::kMatMul, {normed, weight}, cuts({headInput, {1, vocab}}));
  }
  const auto [tokens, lossVocab] = vocabCuts(config_.lossVocab);
  ir::OpAttrs loss;
  loss.fusedLoss = config_.loss == ir::LossKernel::kFused;
  // torchtitan's ChunkedLossWrapper.Config.num_chunks default (torchtitan/components/loss.py).
  constexpr int64_t kLossChunks = 8;
  if (config_.loss == ir::LossKernel::kChunked) loss.lossChunks = kLossChunks;
  addOp("loss", OpKind::kCrossEntropy, {logits, labels},
        cuts({{tokens[0], tokens[1], lossVocab}, {tokens[0], tokens[1]}}), loss);
}

TensorId TransformerBuilder::visionTokens() {
  const auto& v = config_.vision;
  const int64_t b = config_.microBatch;
  tower_ = &vision_;
  cp_ = 1;  // the image tokens are few: the vision tower is not context-parallel
  block_ = "vit.embedding";
  TensorId pixels = addInput("pixels", {b, v.patches, v.patchInput}, storage());
  TensorId patchWeight = addParameter("vit.patch_embed.weight", {v.patchInput, v.hidden});
  TensorId hidden = addOp("vit.patch_embed", OpKind::kMatMul, {pixels, patchWeight},
                          cuts({hiddenState(), {1, 1}}));
  for (int64_t index = 0; index < v.layers; ++index)
    hidden = layer("vit", "vit.layer", index, hidden);
  // The merger: merge^2 neighbouring patches (adjacent in the patch order) become one token.
  block_ = "vit.merger";
  hidden = norm("vit.merger.norm", hidden);
  const int64_t group = v.merge * v.merge * v.hidden;
  const int64_t imageTokens = v.patches / (v.merge * v.merge);
  ir::OpAttrs reshape;
  reshape.newShape = {b, imageTokens, group};
  hidden =
      addOp("vit.merger.reshape", OpKind::kReshape, {hidden}, cuts({activation(false)}), reshape);
  hidden = linear("vit.merger.fc1", hidden, group, group, true, Parallel::kColumn);
  hidden = addOp("vit.merger.act", OpKind::kGeLU, {hidden}, cuts({activation(true)}));
  tower_ = &config_;
  // fc2 projects to the LLM's width; its bias add runs on the LLM's hidden state.
  TensorId tokens = linear("vit.merger.fc2", hidden, group, config_.hidden, true, Parallel::kRow);
  cp_ = config_.degrees().cp;
  return tokens;
}

Expected<ir::Graph> TransformerBuilder::build() {
  const int64_t b = config_.microBatch;
  const auto& v = config_.vision;
  const int64_t imageTokens = v.layers > 0 ? v.patches / (v.merge * v.merge) : 0;
  TensorId image = imageTokens > 0 ? visionTokens() : kFailed;
  TensorId tokens = addInput("tokens", {b, config_.seq - imageTokens}, ir::DType::kI32);
  TensorId labels = addInput("labels", {b, config_.seq}, ir::DType::kI32);
  TensorId hidden = embedding(tokens);
  if (imageTokens > 0) {
    ir::OpAttrs concat;
    concat.axis = 1;
    const std::vector<int64_t> whole{dp_, 1, 1};  // the sequence is not cut along its concat
    hidden = addOp("embedding.merge_vision", OpKind::kConcat, {image, hidden}, cuts({whole, whole}),
                   concat);
  }
  for (int64_t index = 0; index < config_.layers; ++index) {
    hidden = layer("llm", "layer", index, hidden);
  }
  head(hidden, labels);
  if (error_) return error_->in(config_.name);
  return std::move(graph_);
}

}  // namespace

Expected<ir::Graph> buildTransformer(const TransformerConfig& config) {
  if (auto status = validateTransformerConfig(config); !status) return status.error();
  return TransformerBuilder(config).build();
}

namespace {

/// One layer's parameters: attention, MLP (or router and `expertsCounted` of its experts) and the
/// two norms.
int64_t layerParameters(const TransformerConfig& config, int64_t expertsCounted) {
  const int64_t hidden = config.hidden;
  const int64_t queryWidth = config.heads * (hidden / config.heads);
  const int64_t kvWidth = config.kvHeads * (hidden / config.heads);
  const int64_t normParams = config.norm == Config::Norm::kLayerNorm ? 2 * hidden : hidden;
  const bool qkvBias = config.qkvBias || config.linearBias;
  const int64_t attention = hidden * (queryWidth + 2 * kvWidth) + queryWidth * hidden +
                            (qkvBias ? queryWidth + 2 * kvWidth : 0) +
                            (config.linearBias ? hidden : 0);
  const int64_t columnProjections = config.mlp == Config::Mlp::kSwiGLU ? 2 : 1;
  const int64_t projections = (columnProjections + 1) * hidden * config.ffn;
  if (config.experts > 0) {
    // Experts have no biases.
    const int64_t router = hidden * config.experts;
    return attention + router + expertsCounted * projections + 2 * normParams;
  }
  const int64_t mlp =
      projections + (config.linearBias ? columnProjections * config.ffn + hidden : 0);
  return attention + mlp + 2 * normParams;
}

/// The vision tower's parameters: patch embedding, layers and merger.
int64_t visionParameters(const TransformerConfig& config) {
  const auto& v = config.vision;
  if (v.layers == 0) return 0;
  const int64_t group = v.merge * v.merge * v.hidden;
  const int64_t merger =
      2 * v.hidden + group * group + group + group * config.hidden + config.hidden;
  return v.patchInput * v.hidden + v.layers * layerParameters(visionTower(config), 0) + merger;
}

/// The parameters with `expertsCounted` experts of each layer.
int64_t parameterCount(const TransformerConfig& config, int64_t expertsCounted) {
  const int64_t hidden = config.hidden;
  const int64_t normParams = config.norm == Config::Norm::kLayerNorm ? 2 * hidden : hidden;
  const int64_t embedding =
      config.vocab * hidden +
      (config.position == Config::Position::kLearned ? config.seq * hidden : 0);
  const int64_t head = normParams + (config.tiedEmbeddings ? 0 : hidden * config.vocab);
  return embedding + config.layers * layerParameters(config, expertsCounted) + head +
         visionParameters(config);
}

}  // namespace

int64_t transformerParameterCount(const TransformerConfig& config) {
  return parameterCount(config, config.experts);
}

int64_t activeParameterCount(const TransformerConfig& config) {
  return parameterCount(config, config.topK);
}

}  // namespace autopar::frontend
