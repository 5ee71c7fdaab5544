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
        annotate_(config.dataParallel > 0 || config.tensorParallel > 0 ||
                  config.contextParallel > 1),
        dp_(std::max<int64_t>(config.dataParallel, 1)),
        tp_(std::max<int64_t>(config.tensorParallel, 1)),
        sequenceCuts_(config.sequenceParallel ? tp_ : 1),
        cp_(std::max<int64_t>(config.contextParallel, 1)) {}

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
  TensorId mlp(const std::string& prefix, TensorId input);
  /// Layer `index` of the current tower: block "<stack>.layer.<index>", ops "<ops><index>.*".
  TensorId layer(const std::string& stack, const std::string& ops, int64_t index, TensorId input);
  /// The vision tower and merger: image tokens [b, P / merge^2, h].
  TensorId visionTokens();
  void head(TensorId input, TensorId labels);

  /// The annotation, or none when the config asks for no annotations.
  [[nodiscard]] ir::StrategyCuts cuts(ir::StrategyCuts annotation) const {
    return annotate_ ? std::move(annotation) : ir::StrategyCuts{};
  }
  /// Cuts of an activation [b, s, width] that is split on its last dim by tp, or not.
  [[nodiscard]] std::vector<int64_t> activation(bool tensorSplit) const {
    return {dp_, cp_, tensorSplit ? tp_ : 1};
  }
  /// Cuts of the hidden state [b, s, h] between the tensor-parallel regions: replicated over tp,
  /// or split along s with sequence parallelism.
  [[nodiscard]] std::vector<int64_t> hiddenState() const { return {dp_, cp_ * sequenceCuts_, 1}; }

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
};

TensorId TransformerBuilder::addInput(const std::string& name, ir::Shape shape, ir::DType dtype) {
  if (error_) return kFailed;
  auto id = graph_.addTensor(name, ir::TensorType{std::move(shape), dtype}, ir::TensorRole::kInput);
  if (!id) error_ = id.error();
  return id ? *id : kFailed;
}

TensorId TransformerBuilder::addParameter(const std::string& name, ir::Shape shape) {
  if (error_) return kFailed;
  auto id = graph_.addTensor(name, ir::TensorType{std::move(shape), config_.dtype},
                             ir::TensorRole::kParameter);
  if (!id) error_ = id.error();
  return id ? *id : kFailed;
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
  graph_.mutableOp(*id).shard = std::move(cuts);
  return graph_.op(*id).outputs.front();
}

TensorId TransformerBuilder::linear(const std::string& name, TensorId input, int64_t inFeatures,
                                    int64_t outFeatures, bool bias, Parallel parallel) {
  const bool column = parallel == Parallel::kColumn;
  TensorId weight = addParameter(name + ".weight", {inFeatures, outFeatures});
  // Column: X (dp,1,1) x W (1,tp) -> Y (dp,1,tp). Row: X (dp,1,tp) x W (tp,1) -> partial sums.
  ir::StrategyCuts matmulCuts = column ? ir::StrategyCuts{activation(false), {1, tp_}}
                                       : ir::StrategyCuts{activation(true), {tp_, 1}};
  TensorId output = addOp(name, OpKind::kMatMul, {input, weight}, cuts(std::move(matmulCuts)));
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
  TensorId embedded =
      addOp("embedding", OpKind::kGather, {table, tokens}, cuts({{tp_, 1}, {dp_, cp_}}));
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
  attrs.scoresInMemory = config_.scoresInMemory;
  // Context parallelism cuts the queries' sequence; every query attends to all keys, so the keys
  // and values are gathered along the sequence (the traffic of ring attention).
  const std::vector<int64_t> keys{dp_, 1, tp_};
  TensorId context = addOp(prefix + ".flash_attention", OpKind::kFlashAttention, {q, k, v},
                           cuts({activation(true), keys, keys}), attrs);
  return linear(prefix + ".o_proj", context, queryWidth, t.hidden, t.linearBias, Parallel::kRow);
}

TensorId TransformerBuilder::mlp(const std::string& prefix, TensorId input) {
  const int64_t hidden = tower_->hidden;
  const int64_t ffn = tower_->ffn;
  const bool bias = tower_->linearBias;
  if (tower_->mlp == Config::Mlp::kGeLU) {
    TensorId up = linear(prefix + ".fc1", input, hidden, ffn, bias, Parallel::kColumn);
    TensorId act = addOp(prefix + ".act", OpKind::kGeLU, {up}, cuts({activation(true)}));
    return linear(prefix + ".fc2", act, ffn, hidden, bias, Parallel::kRow);
  }
  TensorId gate = linear(prefix + ".gate_proj", input, hidden, ffn, bias, Parallel::kColumn);
  TensorId up = linear(prefix + ".up_proj", input, hidden, ffn, bias, Parallel::kColumn);
  TensorId act = addOp(prefix + ".act", OpKind::kSiLU, {gate}, cuts({activation(true)}));
  TensorId gated =
      addOp(prefix + ".mul", OpKind::kMul, {act, up}, cuts({activation(true), activation(true)}));
  return linear(prefix + ".down_proj", gated, ffn, hidden, bias, Parallel::kRow);
}

TensorId TransformerBuilder::layer(const std::string& stack, const std::string& ops, int64_t index,
                                   TensorId input) {
  block_ = fmt::format("{}.layer.{}", stack, index);
  const std::string prefix = fmt::format("{}{}", ops, index);
  const ir::StrategyCuts residualCuts = cuts({hiddenState(), hiddenState()});
  TensorId attnOut = attention(prefix + ".attn", norm(prefix + ".attn_norm", input));
  attnOut = hiddenDropout(prefix + ".attn.dropout", attnOut);
  TensorId hidden = addOp(prefix + ".attn.residual", OpKind::kAdd, {input, attnOut}, residualCuts);
  TensorId mlpOut = mlp(prefix + ".mlp", norm(prefix + ".mlp_norm", hidden));
  mlpOut = hiddenDropout(prefix + ".mlp.dropout", mlpOut);
  return addOp(prefix + ".mlp.residual", OpKind::kAdd, {hidden, mlpOut}, residualCuts);
}

void TransformerBuilder::head(TensorId input, TensorId labels) {
  block_ = "head";
  TensorId normed = norm("final_norm", input);
  TensorId logits = kFailed;
  if (config_.tiedEmbeddings) {
    // The embedding table [v, h] read transposed: its vocab rows split by tp as in the Gather.
    ir::OpAttrs attrs;
    attrs.transposeB = true;
    TensorId table = graph_.findTensor("embedding.weight").value_or(kFailed);
    logits = addOp("lm_head", OpKind::kMatMul, {normed, table}, cuts({activation(false), {tp_, 1}}),
                   attrs);
  } else {
    TensorId weight = addParameter("lm_head.weight", {config_.hidden, config_.vocab});
    logits =
        addOp("lm_head", OpKind::kMatMul, {normed, weight}, cuts({activation(false), {1, tp_}}));
  }
  addOp("loss", OpKind::kCrossEntropy, {logits, labels}, cuts({activation(true), {dp_, cp_}}));
}

TensorId TransformerBuilder::visionTokens() {
  const auto& v = config_.vision;
  const int64_t b = config_.microBatch;
  tower_ = &vision_;
  cp_ = 1;  // the image tokens are few: the vision tower is not context-parallel
  block_ = "vit.embedding";
  TensorId pixels = addInput("pixels", {b, v.patches, v.patchInput}, config_.dtype);
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
  cp_ = std::max<int64_t>(config_.contextParallel, 1);
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

Error fieldError(const Config& config, std::string_view field, const std::string& message) {
  return Error{fmt::format("{}: {}: {}", config.name, field, message)};
}

Status validateDims(const Config& config) {
  const std::pair<std::string_view, int64_t> dims[] = {
      {"layers", config.layers}, {"hidden", config.hidden},
      {"heads", config.heads},   {"kvHeads", config.kvHeads},
      {"ffn", config.ffn},       {"vocab", config.vocab},
      {"seq", config.seq},       {"microBatch", config.microBatch}};
  for (const auto& [field, value] : dims) {
    if (value <= 0) {
      return fieldError(config, field, fmt::format("expected a positive size, got {}", value));
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
  if (config.dataParallel < 0 || config.tensorParallel < 0) {
    const bool dataBad = config.dataParallel < 0;
    return fieldError(config, dataBad ? "dataParallel" : "tensorParallel",
                      fmt::format("expected 0 (no annotation) or a positive degree, got {}",
                                  dataBad ? config.dataParallel : config.tensorParallel));
  }
  if (config.dataParallel > 0 && config.microBatch % config.dataParallel != 0) {
    return fieldError(config, "microBatch",
                      fmt::format("{} is not divisible by dataParallel {}", config.microBatch,
                                  config.dataParallel));
  }
  if (config.contextParallel < 0) {
    return fieldError(
        config, "contextParallel",
        fmt::format("expected 0 or a positive degree, got {}", config.contextParallel));
  }
  const int64_t cp = std::max<int64_t>(config.contextParallel, 1);
  const int64_t sequenceCuts =
      cp * (config.sequenceParallel ? std::max<int64_t>(config.tensorParallel, 1) : 1);
  const auto& v = config.vision;
  const int64_t text = config.seq - (v.layers > 0 ? v.patches / (v.merge * v.merge) : 0);
  if (cp > 1 && (config.seq % sequenceCuts != 0 || text % cp != 0)) {
    return fieldError(
        config, "seq",
        fmt::format("{} ({} of it text) is not divisible by contextParallel {}{}", config.seq, text,
                    cp, config.sequenceParallel ? " x tensorParallel" : ""));
  }
  if (config.tensorParallel <= 0) return {};
  const std::pair<std::string_view, int64_t> splitByTp[] = {{"heads", config.heads},
                                                            {"kvHeads", config.kvHeads},
                                                            {"ffn", config.ffn},
                                                            {"vocab", config.vocab}};
  for (const auto& [field, value] : splitByTp) {
    if (value % config.tensorParallel == 0) continue;
    return fieldError(
        config, field,
        fmt::format("{} is not divisible by tensorParallel {}", value, config.tensorParallel));
  }
  if (config.sequenceParallel && config.seq % config.tensorParallel != 0) {
    return fieldError(config, "seq",
                      fmt::format("{} is not divisible by tensorParallel {} (sequenceParallel)",
                                  config.seq, config.tensorParallel));
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
  const int64_t tp = config.tensorParallel;
  if (tp <= 1) return {};
  for (const auto& [field, value] :
       {std::pair<std::string_view, int64_t>{"vision.heads", v.heads}, {"vision.ffn", v.ffn}}) {
    if (value % tp != 0) {
      return fieldError(config, field,
                        fmt::format("{} is not divisible by tensorParallel {}", value, tp));
    }
  }
  const int64_t imageTokens = v.patches / (v.merge * v.merge);
  if (config.sequenceParallel && (v.patches % tp != 0 || imageTokens % tp != 0)) {
    return fieldError(config, "vision.patches",
                      fmt::format("{} patches ({} image tokens) do not divide by tensorParallel {} "
                                  "(sequenceParallel)",
                                  v.patches, imageTokens, tp));
  }
  return {};
}

}  // namespace

Status validateTransformerConfig(const TransformerConfig& config) {
  if (config.name.empty()) return Error{"name: expected a non-empty model name"};
  if (auto status = validateDims(config); !status) return status;
  if (auto status = validateVision(config); !status) return status;
  return validateParallel(config);
}

Expected<ir::Graph> buildTransformer(const TransformerConfig& config) {
  if (auto status = validateTransformerConfig(config); !status) return status.error();
  return TransformerBuilder(config).build();
}

namespace {

/// One layer's parameters: attention, MLP and the two norms.
int64_t layerParameters(const TransformerConfig& config) {
  const int64_t hidden = config.hidden;
  const int64_t queryWidth = config.heads * (hidden / config.heads);
  const int64_t kvWidth = config.kvHeads * (hidden / config.heads);
  const int64_t normParams = config.norm == Config::Norm::kLayerNorm ? 2 * hidden : hidden;
  const bool qkvBias = config.qkvBias || config.linearBias;
  const int64_t attention = hidden * (queryWidth + 2 * kvWidth) + queryWidth * hidden +
                            (qkvBias ? queryWidth + 2 * kvWidth : 0) +
                            (config.linearBias ? hidden : 0);
  const int64_t columnProjections = config.mlp == Config::Mlp::kSwiGLU ? 2 : 1;
  const int64_t mlp = (columnProjections + 1) * hidden * config.ffn +
                      (config.linearBias ? columnProjections * config.ffn + hidden : 0);
  return attention + mlp + 2 * normParams;
}

/// The vision tower's parameters: patch embedding, layers and merger.
int64_t visionParameters(const TransformerConfig& config) {
  const auto& v = config.vision;
  if (v.layers == 0) return 0;
  const int64_t group = v.merge * v.merge * v.hidden;
  const int64_t merger =
      2 * v.hidden + group * group + group + group * config.hidden + config.hidden;
  return v.patchInput * v.hidden + v.layers * layerParameters(visionTower(config)) + merger;
}

}  // namespace

int64_t transformerParameterCount(const TransformerConfig& config) {
  const int64_t hidden = config.hidden;
  const int64_t normParams = config.norm == Config::Norm::kLayerNorm ? 2 * hidden : hidden;
  const int64_t embedding =
      config.vocab * hidden +
      (config.position == Config::Position::kLearned ? config.seq * hidden : 0);
  const int64_t head = normParams + (config.tiedEmbeddings ? 0 : hidden * config.vocab);
  return embedding + config.layers * layerParameters(config) + head + visionParameters(config);
}

}  // namespace autopar::frontend
