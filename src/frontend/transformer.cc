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

/// Builds the graph op by op. The first failure is kept in `error_` and every later call does
/// nothing, so the layer code reads as a straight list of ops; build() reports the failure.
class TransformerBuilder {
 public:
  explicit TransformerBuilder(const Config& config)
      : config_(config),
        graph_(config.name),
        annotate_(config.dataParallel > 0 || config.tensorParallel > 0),
        dp_(std::max<int64_t>(config.dataParallel, 1)),
        tp_(std::max<int64_t>(config.tensorParallel, 1)),
        sequenceCuts_(config.sequenceParallel ? tp_ : 1),
        headDim_(config.hidden / config.heads) {}

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
  /// "<name>" Dropout at config_.hiddenDropout, or `input` itself when the rate is 0.
  TensorId hiddenDropout(const std::string& name, TensorId input);
  TensorId embedding(TensorId tokens);
  TensorId attention(const std::string& prefix, TensorId input);
  TensorId mlp(const std::string& prefix, TensorId input);
  TensorId layer(int64_t index, TensorId input);
  void head(TensorId input, TensorId labels);

  /// The annotation, or none when the config asks for no annotations.
  [[nodiscard]] ir::StrategyCuts cuts(ir::StrategyCuts annotation) const {
    return annotate_ ? std::move(annotation) : ir::StrategyCuts{};
  }
  /// Cuts of an activation [b, s, width] that is split on its last dim by tp, or not.
  [[nodiscard]] std::vector<int64_t> activation(bool tensorSplit) const {
    return {dp_, 1, tensorSplit ? tp_ : 1};
  }
  /// Cuts of the hidden state [b, s, h] between the tensor-parallel regions: replicated over tp,
  /// or split along s with sequence parallelism.
  [[nodiscard]] std::vector<int64_t> hiddenState() const { return {dp_, sequenceCuts_, 1}; }

  const Config& config_;
  ir::Graph graph_;
  std::optional<Error> error_;
  std::string block_;
  bool annotate_;
  int64_t dp_;
  int64_t tp_;
  int64_t sequenceCuts_;  ///< tp with sequence parallelism, else 1
  int64_t headDim_;
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
  attrs.epsilon = config_.normEpsilon;
  TensorId gamma = addParameter(name + ".weight", {config_.hidden});
  if (config_.norm == Config::Norm::kRMSNorm) {
    return addOp(name, OpKind::kRMSNorm, {input, gamma}, cuts({hiddenState(), {1}}), attrs);
  }
  TensorId beta = addParameter(name + ".bias", {config_.hidden});
  return addOp(name, OpKind::kLayerNorm, {input, gamma, beta}, cuts({hiddenState(), {1}, {1}}),
               attrs);
}

TensorId TransformerBuilder::hiddenDropout(const std::string& name, TensorId input) {
  if (config_.hiddenDropout <= 0) return input;
  ir::OpAttrs attrs;
  attrs.dropoutRate = config_.hiddenDropout;
  return addOp(name, OpKind::kDropout, {input}, cuts({hiddenState()}), attrs);
}

TensorId TransformerBuilder::embedding(TensorId tokens) {
  block_ = "embedding";
  TensorId table = addParameter("embedding.weight", {config_.vocab, config_.hidden});
  // Vocab-parallel embedding (MindFormers VocabEmbedding): the table's rows split by tp.
  TensorId embedded =
      addOp("embedding", OpKind::kGather, {table, tokens}, cuts({{tp_, 1}, {dp_, 1}}));
  if (config_.position != Config::Position::kLearned) return embedded;
  // The table [s, h] broadcasts over the batch; its s is cut like the hidden state's.
  TensorId positions = addParameter("position_embedding.weight", {config_.seq, config_.hidden});
  return addOp("embedding.position_add", OpKind::kAdd, {embedded, positions},
               cuts({hiddenState(), {sequenceCuts_, 1}}));
}

TensorId TransformerBuilder::attention(const std::string& prefix, TensorId input) {
  const bool qkvBias = config_.qkvBias || config_.linearBias;
  const int64_t queryWidth = config_.heads * headDim_;
  const int64_t kvWidth = config_.kvHeads * headDim_;
  TensorId q =
      linear(prefix + ".q_proj", input, config_.hidden, queryWidth, qkvBias, Parallel::kColumn);
  TensorId k =
      linear(prefix + ".k_proj", input, config_.hidden, kvWidth, qkvBias, Parallel::kColumn);
  TensorId v =
      linear(prefix + ".v_proj", input, config_.hidden, kvWidth, qkvBias, Parallel::kColumn);
  if (config_.position == Config::Position::kRotary) {
    ir::OpAttrs queryHeads;
    queryHeads.numHeads = config_.heads;
    ir::OpAttrs kvHeads;
    kvHeads.numHeads = config_.kvHeads;
    q = addOp(prefix + ".q_rotary", OpKind::kRotary, {q}, cuts({activation(true)}), queryHeads);
    k = addOp(prefix + ".k_rotary", OpKind::kRotary, {k}, cuts({activation(true)}), kvHeads);
  }
  ir::OpAttrs attrs;
  attrs.numHeads = config_.heads;
  attrs.numKvHeads = config_.kvHeads;
  attrs.causal = true;
  TensorId context = addOp(prefix + ".flash_attention", OpKind::kFlashAttention, {q, k, v},
                           cuts({activation(true), activation(true), activation(true)}), attrs);
  return linear(prefix + ".o_proj", context, queryWidth, config_.hidden, config_.linearBias,
                Parallel::kRow);
}

TensorId TransformerBuilder::mlp(const std::string& prefix, TensorId input) {
  const int64_t hidden = config_.hidden;
  const int64_t ffn = config_.ffn;
  const bool bias = config_.linearBias;
  if (config_.mlp == Config::Mlp::kGeLU) {
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

TensorId TransformerBuilder::layer(int64_t index, TensorId input) {
  block_ = fmt::format("llm.layer.{}", index);
  const std::string prefix = fmt::format("layer{}", index);
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
  addOp("loss", OpKind::kCrossEntropy, {logits, labels}, cuts({activation(true), {dp_, 1}}));
}

Expected<ir::Graph> TransformerBuilder::build() {
  const ir::Shape tokenShape = {config_.microBatch, config_.seq};
  TensorId tokens = addInput("tokens", tokenShape, ir::DType::kI32);
  TensorId labels = addInput("labels", tokenShape, ir::DType::kI32);
  TensorId hidden = embedding(tokens);
  for (int64_t index = 0; index < config_.layers; ++index) hidden = layer(index, hidden);
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

}  // namespace

Status validateTransformerConfig(const TransformerConfig& config) {
  if (config.name.empty()) return Error{"name: expected a non-empty model name"};
  if (auto status = validateDims(config); !status) return status;
  return validateParallel(config);
}

Expected<ir::Graph> buildTransformer(const TransformerConfig& config) {
  if (auto status = validateTransformerConfig(config); !status) return status.error();
  return TransformerBuilder(config).build();
}

int64_t transformerParameterCount(const TransformerConfig& config) {
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
  const int64_t perLayer = attention + mlp + 2 * normParams;
  const int64_t embedding =
      config.vocab * hidden +
      (config.position == Config::Position::kLearned ? config.seq * hidden : 0);
  const int64_t head = normParams + (config.tiedEmbeddings ? 0 : hidden * config.vocab);
  return embedding + config.layers * perLayer + head;
}

}  // namespace autopar::frontend
