#include "runtime/executor.h"

#include <fmt/format.h>
#include <malloc.h>
#include <torch/torch.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "runtime/batch_shares.h"
#include "runtime/kernels.h"
#include "runtime/launcher.h"
#include "runtime/process_groups.h"
#include "runtime/redistribute.h"
#include "runtime/stage_transfers.h"

namespace autopar::runtime {

namespace {

using layout::TensorLayout;

std::vector<int> sorted(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

at::Tensor cut(at::Tensor full, const BlockRanges& ranges) {
  for (size_t dim = 0; dim < ranges.size(); ++dim) {
    full = full.narrow(static_cast<int64_t>(dim), ranges[dim].first,
                       ranges[dim].second - ranges[dim].first);
  }
  return full.contiguous();
}

/// Heap bytes in use (glibc: small blocks plus mmapped large ones).
int64_t heapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

/// A value on this rank: its block and the layout it is in.
struct Value {
  at::Tensor block;
  TensorLayout layout;
};

/// One rank's state across steps.
class Rank {
 public:
  Rank(const Program& program, ProcessGroups& groups, const RunConfig& config)
      : program_(program), groups_(groups), config_(config) {}

  Status prepare();
  Expected<StepReport> step(int index);
  [[nodiscard]] std::vector<ParameterBlock> parameters() const;

 private:
  /// One micro-batch in flight: the loss (last stage), the blocks received from earlier stages
  /// and the blocks sent to later ones, kept for the backward pass.
  struct MicroBatch {
    at::Tensor loss;
    std::vector<std::pair<size_t, at::Tensor>> received;  ///< transfer index, leaf
    std::vector<std::pair<size_t, at::Tensor>> sent;      ///< transfer index, sent block
  };

  [[nodiscard]] int stageOf(ir::OpId op) const {
    return program_.opStage.empty() ? 0 : program_.opStage[static_cast<size_t>(op)];
  }
  /// Where a graph input or parameter lives: the layout its first consumer on this stage needs.
  [[nodiscard]] std::optional<TensorLayout> homeLayout(ir::TensorId tensor) const;
  [[nodiscard]] at::Tensor drawWhole(const ir::Tensor& tensor, int step) const;
  /// This rank's block of a tensor in `layout`, in the plan's data-parallel shares.
  [[nodiscard]] BlockRanges rangesOf(const TensorLayout& layout) const;
  Expected<MicroBatch> forward(int step, int micro);
  Expected<at::Tensor> runOps(std::map<ir::TensorId, Value>& values, int sample, MicroBatch& batch);
  /// Receives transfer `t`'s block for `batch` into `values`.
  void receive(size_t t, std::map<ir::TensorId, Value>& values, MicroBatch& batch);
  /// Sends `value` by transfer `t`, keeping the sent block in `batch` for the backward.
  Status send(size_t t, const Value& value, MicroBatch& batch);
  at::Tensor lossOf(const at::Tensor& last);
  /// Each op's part (Part) in the model.
  [[nodiscard]] std::vector<Part> partsOfOps() const;
  void backward(MicroBatch& micro);
  /// All-reduces the step's accumulated gradients of the parameters in gradientGroups_, one
  /// flat buffer per group (data parallelism's bucketed gradient sync).
  void syncGradients();
  void optimizerStep();

  const Program& program_;
  ProcessGroups& groups_;
  const RunConfig& config_;
  std::vector<rules::ShardingRule> rules_;
  std::map<ir::TensorId, Value> parameters_;
  /// Per parameter, its optimizer shard (a leaf Adam updates) and the replicas it is cut over.
  struct Shard {
    at::Tensor leaf;
    std::vector<int> replicas;
    int dim = 0;
    /// The gradient is summed over exactly the replicas: one reduce-scatter gives this rank's
    /// part (ZeRO's), instead of an all-reduce of the whole gradient.
    bool scatterGradient = false;
  };
  std::map<ir::TensorId, Shard> shards_;
  Expected<Shard> optimizerShard(const ir::Tensor& tensor, const TensorLayout& layout,
                                 const at::Tensor& block) const;
  std::vector<int> lossMembers_;  ///< the ranks whose loss scalars add up to the loss
  int stage_ = 0;                 ///< this rank's pipeline stage
  bool lastStage_ = true;
  std::vector<Transfer> transfers_;
  std::map<ir::TensorId, size_t> inbound_;                ///< tensor -> the transfer bringing it
  std::map<ir::TensorId, std::vector<size_t>> outbound_;  ///< tensor -> transfers sending it
  std::vector<Part> opParts_;
  BatchShares shares_;
  /// Parameters with one use on this stage whose gradient comes out partial: the ranks it is
  /// summed over once per step (instead of once per micro-batch inside the backward).
  std::map<ir::TensorId, std::vector<int>> gradientGroups_;
  std::array<PartCost, kParts> measured_{};  ///< the current micro-batch's forward, per part
  double forwardSeconds_ = 0;                ///< the current micro-batch's ops and sends
  int64_t samples_ = 0;  ///< rows of this rank's block of the batch (a graph input's dim 0)
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

std::optional<TensorLayout> Rank::homeLayout(ir::TensorId tensor) const {
  for (ir::OpId consumer : program_.graph.tensor(tensor).consumers) {
    if (stageOf(consumer) != stage_) continue;
    const ir::Op& op = program_.graph.op(consumer);
    const auto at = std::find(op.inputs.begin(), op.inputs.end(), tensor) - op.inputs.begin();
    return program_.sharding.ops[static_cast<size_t>(consumer)].inputs[static_cast<size_t>(at)];
  }
  return std::nullopt;
}

BlockRanges Rank::rangesOf(const TensorLayout& layout) const {
  auto ranges = shares_.rangesOf(layout, groups_.rank());
  // prepare() checked every layout the ops use (checkShares).
  if (!ranges) throw std::logic_error(ranges.error().message);
  return std::move(*ranges);
}

/// Parameters: N(0, 0.02) but norm scales 1 and norm shifts 0. Integer inputs: uniform over the
/// rows of the table they index or the classes they label. Float inputs: N(0, 1).
at::Tensor Rank::drawWhole(const ir::Tensor& tensor, int step) const {
  const ir::Shape& shape = tensor.type.shape;
  const ir::Op& user = program_.graph.op(tensor.consumers.front());
  const auto slot =
      std::find(user.inputs.begin(), user.inputs.end(), tensor.id) - user.inputs.begin();
  auto generator = generatorFor(config_.seed, tensor.name, step);
  if (tensor.role == ir::TensorRole::kParameter) {
    const bool norm = user.kind == ir::OpKind::kRMSNorm || user.kind == ir::OpKind::kLayerNorm;
    if (norm && slot == 1) return torch::ones(shape);
    if (norm && slot == 2) return torch::zeros(shape);
    return torch::randn(shape, generator) * 0.02;
  }
  if (!ir::isFloating(tensor.type.dtype)) {
    // Integer inputs index a Gather's table or label a CrossEntropy's classes, both read from
    // the op's other input; a user with one input has no range to draw from.
    if (user.inputs.size() < 2) {
      throw std::invalid_argument(fmt::format(
          "{}: integer input '{}' of an op with one input has no range", user.name, tensor.name));
    }
    const auto& other = program_.graph.tensor(user.inputs[slot == 1 ? 0 : 1]).type.shape;
    const int64_t classes = user.kind == ir::OpKind::kGather ? other.front() : other.back();
    return torch::randint(0, classes, shape, generator, torch::kInt64);
  }
  return torch::randn(shape, generator);
}

/// With optimizer parallelism, the part of `block` whose Adam states this rank keeps: the block
/// cut along the plan's shard dim over the ranks that hold the same block. No leaf when the plan
/// does not shard the parameter.
Expected<Rank::Shard> Rank::optimizerShard(const ir::Tensor& tensor, const TensorLayout& layout,
                                           const at::Tensor& block) const {
  Shard shard;
  for (const auto& record : program_.parameters) {
    if (record.name != tensor.name || record.optimizerShards <= 1) continue;
    std::vector<int> unused;  // axes the block is replicated over
    for (int axis = 0; axis < layout.deviceMatrix.numAxes(); ++axis) {
      bool used = std::find(layout.partialAxes.begin(), layout.partialAxes.end(), axis) !=
                  layout.partialAxes.end();
      for (const auto& axes : layout.dimAxes) {
        used = used || std::find(axes.begin(), axes.end(), axis) != axes.end();
      }
      if (!used) unused.push_back(axis);
    }
    shard.replicas =
        layout.deviceMatrix.group(layout.deviceMatrix.positionOf(groups_.rank()), unused);
    if (static_cast<int64_t>(shard.replicas.size()) != record.optimizerShards) {
      return Error{
          fmt::format("parameters.{}: {} optimizer shards but the parameter has {} "
                      "replicas; the runtime cuts optimizer states over all of them",
                      tensor.name, record.optimizerShards, shard.replicas.size())};
    }
    shard.dim = record.shardDim;
    shard.leaf = block.detach()
                     .chunk(record.optimizerShards,
                            shard.dim)[static_cast<size_t>(groups_.position(shard.replicas))]
                     .clone()
                     .set_requires_grad(true);
  }
  return shard;
}

Status Rank::prepare() {
  const ir::Graph& graph = program_.graph;
  for (const ir::Op& op : graph.ops()) {
    auto rule = rules::shardingRuleFor(graph, op);
    if (!rule) return rule.error().in(op.name);
    rules_.push_back(std::move(*rule));
  }
  opParts_ = partsOfOps();
  const int perStage = groups_.world() / program_.stages;
  stage_ = groups_.rank() / perStage;
  auto shares = BatchShares::over(program_.batchShares, perStage);
  if (!shares) return shares.error();
  shares_ = std::move(*shares);
  if (auto status =
          shares_.checkStage(graph, program_.sharding, program_.opStage, stage_, groups_.rank());
      !status) {
    return status;
  }
  lastStage_ = stageOf(graph.ops().back().id) == stage_;
  if (program_.stages > 1) {
    transfers_ =
        stageTransfers(graph, program_.sharding, program_.opStage, program_.opChunk, perStage);
    for (size_t t = 0; t < transfers_.size(); ++t) {
      if (transfers_[t].toStage == stage_) inbound_[transfers_[t].tensor] = t;
      if (transfers_[t].fromStage == stage_) outbound_[transfers_[t].tensor].push_back(t);
    }
  }
  std::vector<at::Tensor> leaves;
  for (ir::TensorId id : graph.parameters()) {
    const ir::Tensor& tensor = graph.tensor(id);
    auto home = homeLayout(id);
    if (!home) continue;
    for (ir::OpId consumer : tensor.consumers) {
      if (stageOf(consumer) != stage_) {
        return Error{
            fmt::format("{}: used on stages {} and {}; the runtime keeps a parameter on "
                        "one stage",
                        tensor.name, stage_, stageOf(consumer))};
      }
    }
    TensorLayout layout = std::move(*home);
    at::Tensor block = cut(drawWhole(tensor, 0), rangesOf(layout));
    block.set_requires_grad(true);
    auto shard = optimizerShard(tensor, layout, block);
    if (!shard) return shard.error();
    leaves.push_back(shard->leaf.defined() ? shard->leaf : block);
    if (shard->leaf.defined()) shards_.emplace(id, std::move(*shard));
    // A parameter with one use has its gradient summed once per step, not per micro-batch.
    const ir::OpId consumer = tensor.consumers.front();
    const ir::Op& user = graph.op(consumer);
    const auto slot = static_cast<size_t>(std::find(user.inputs.begin(), user.inputs.end(), id) -
                                          user.inputs.begin());
    const rules::ShardedOp& sharded = program_.sharding.ops[static_cast<size_t>(consumer)];
    if (tensor.consumers.size() == 1 && !sharded.inputGradPartialAxes[slot].empty()) {
      gradientGroups_[id] = sharded.matrix.group(sharded.matrix.positionOf(groups_.rank()),
                                                 sharded.inputGradPartialAxes[slot]);
      auto zero = shards_.find(id);
      if (zero != shards_.end()) {
        zero->second.scatterGradient = sorted(gradientGroups_[id]) == sorted(zero->second.replicas);
      }
    }
    parameters_.emplace(id, Value{block, std::move(layout)});
  }
  if (config_.sgd) {
    optimizer_ =
        std::make_unique<torch::optim::SGD>(leaves, torch::optim::SGDOptions(config_.learningRate));
  } else {
    optimizer_ = std::make_unique<torch::optim::Adam>(
        leaves, torch::optim::AdamOptions(config_.learningRate).eps(config_.adamEpsilon));
  }
  return {};
}

Expected<Rank::MicroBatch> Rank::forward(int step, int micro) {
  const ir::Graph& graph = program_.graph;
  const int sample = step * program_.microBatches + micro;  // seeds the data and dropout
  MicroBatch batch;
  std::map<ir::TensorId, Value> values = parameters_;
  for (const ir::Tensor& tensor : graph.tensors()) {
    if (tensor.role != ir::TensorRole::kInput) continue;
    auto layout = homeLayout(tensor.id);
    if (!layout) continue;
    at::Tensor block = cut(drawWhole(tensor, sample), rangesOf(*layout));
    if (samples_ == 0 && block.dim() > 0) samples_ = block.size(0);
    values.emplace(tensor.id, Value{block, std::move(*layout)});
  }
  const auto opsStart = std::chrono::steady_clock::now();  // the data is drawn: not timed
  auto loss = runOps(values, sample, batch);
  if (!loss) return loss.error();
  forwardSeconds_ = seconds(opsStart);
  batch.loss = *loss;
  return batch;
}

void Rank::receive(size_t t, std::map<ir::TensorId, Value>& values, MicroBatch& batch) {
  const Transfer& transfer = transfers_[t];
  const bool floating = ir::isFloating(program_.graph.tensor(transfer.tensor).type.dtype);
  std::vector<int64_t> shape;
  for (const auto& [lo, hi] : rangesOf(transfer.receiverLayout)) shape.push_back(hi - lo);
  at::Tensor block = torch::empty(shape, floating ? torch::kFloat32 : torch::kInt64);
  groups_.receive(block, peerOf(transfer, groups_.rank()), static_cast<int>(2 * t));
  if (floating) block.set_requires_grad(true);
  batch.received.emplace_back(t, block);
  values.insert_or_assign(transfer.tensor, Value{block, transfer.receiverLayout});
}

Status Rank::send(size_t t, const Value& value, MicroBatch& batch) {
  const Transfer& transfer = transfers_[t];
  auto block = redistributeBlock(groups_, program_.cluster, shares_, value.block, value.layout,
                                 transfer.senderLayout);
  if (!block) return block.error();
  groups_.send(*block, peerOf(transfer, groups_.rank()), static_cast<int>(2 * t));
  batch.sent.emplace_back(t, *block);
  return {};
}

/// Runs this stage's ops, receiving what other stages produce just before its first use and
/// sending what they consume as soon as it is made; returns the loss on the last stage, else an
/// undefined tensor.
Expected<at::Tensor> Rank::runOps(std::map<ir::TensorId, Value>& values, int sample,
                                  MicroBatch& batch) {
  const ir::Graph& graph = program_.graph;
  at::Tensor last;
  for (const ir::Op& op : graph.ops()) {
    if (stageOf(op.id) != stage_) continue;
    const auto opStart = std::chrono::steady_clock::now();
    const int64_t opBytes = config_.measure ? heapInUse() : 0;
    const rules::ShardedOp& sharded = program_.sharding.ops[static_cast<size_t>(op.id)];
    const int64_t position = sharded.matrix.positionOf(groups_.rank());
    KernelContext context{groups_,      graph,    op, rules_[static_cast<size_t>(op.id)],
                          sharded,      position, {}, {},
                          config_.seed, sample};
    std::vector<at::Tensor> inputs;
    for (ir::TensorId input : op.inputs) {
      if (values.count(input) == 0) receive(inbound_.at(input), values, batch);
    }
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const Value& value = values.at(op.inputs[i]);
      const auto& axes = sharded.inputGradPartialAxes[i];
      const bool deferred = gradientGroups_.count(op.inputs[i]) > 0;
      const bool sumCopies = !axes.empty() && !deferred && !config_.dropGradientSums &&
                             ir::isFloating(graph.tensor(op.inputs[i]).type.dtype);
      std::vector<int> copies;
      if (sumCopies) copies = sorted(sharded.matrix.group(position, axes));
      auto block = redistributeBlock(groups_, program_.cluster, shares_, value.block, value.layout,
                                     sharded.inputs[i], sumCopies ? &copies : nullptr);
      if (!block) return block.error().in(op.name);
      if (!copies.empty()) *block = collective::broadcast(groups_, copies, *block);
      inputs.push_back(*block);
      context.inputRanges.push_back(rangesOf(sharded.inputs[i]));
    }
    context.outputRanges = rangesOf(sharded.outputs[0]);
    last = runKernel(context, inputs);
    values.insert_or_assign(op.outputs[0], Value{last, sharded.outputs[0]});
    if (auto sends = outbound_.find(op.outputs[0]); sends != outbound_.end()) {
      for (size_t t : sends->second) {
        if (auto status = send(t, values.at(op.outputs[0]), batch); !status) {
          return status.error().in(op.name);
        }
      }
    }
    if (config_.measure) {
      PartCost& part = measured_[static_cast<size_t>(opParts_[static_cast<size_t>(op.id)])];
      part.forwardSeconds += seconds(opStart);
      part.keptBytes += heapInUse() - opBytes;
    }
  }
  if (!lastStage_) return at::Tensor();
  return lossOf(last);
}

/// The training loss from the last op's block: the op's scalar, or for a graph without a loss
/// (seed 002's FFN ends at its last layer) a fixed random projection of its output,
/// mean(output * R), R drawn whole and cut like the output. Also notes which ranks' scalars add
/// up to the loss.
at::Tensor Rank::lossOf(const at::Tensor& last) {
  const ir::Graph& graph = program_.graph;
  const rules::ShardedOp& final = program_.sharding.ops.back();
  const int64_t position = final.matrix.positionOf(groups_.rank());
  const TensorLayout& layout = final.outputs[0];
  // The ranks whose scalars add up to the loss: those holding other blocks or partial sums.
  std::vector<int> axes = layout.partialAxes;
  for (const auto& dimAxes : layout.dimAxes) {
    axes.insert(axes.end(), dimAxes.begin(), dimAxes.end());
  }
  std::sort(axes.begin(), axes.end());
  lossMembers_ = final.matrix.group(position, axes);
  if (last.dim() == 0) return last;
  const ir::Tensor& output = graph.tensor(graph.ops().back().outputs[0]);
  const at::Tensor probe =
      torch::randn(output.type.shape, generatorFor(config_.seed, output.name + ".probe", 0));
  return (last * cut(probe, rangesOf(layout))).sum() / static_cast<double>(probe.numel());
}

std::vector<Part> Rank::partsOfOps() const {
  const auto& ops = program_.graph.ops();
  std::vector<Part> parts(ops.size(), Part::kFirst);
  bool seenLayer = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ir::isStackLayer(ops[i].block)) {
      parts[i] = Part::kLayers;
      seenLayer = true;
    } else if (seenLayer) {
      parts[i] = Part::kLast;
    }
  }
  return parts;
}

/// The micro-batch's backward: from the loss (weighted 1 / micro-batches, the step's loss being
/// their mean) and from the gradients later stages send back; then the gradients of the received
/// blocks go back to the stages that sent them.
void Rank::backward(MicroBatch& batch) {
  int chunks = 1;
  for (int chunk : program_.opChunk) chunks = std::max(chunks, chunk + 1);
  const int lossChunk =
      program_.opChunk.empty() ? 0 : program_.opChunk[program_.graph.ops().size() - 1];
  // Chunk by chunk from the last: a chunk's gradients reach its received blocks before the
  // stage that sent them needs them for its own earlier chunk.
  for (int chunk = chunks - 1; chunk >= 0; --chunk) {
    std::vector<at::Tensor> roots;
    std::vector<at::Tensor> grads;
    if (batch.loss.defined() && chunk == lossChunk) {
      roots.push_back(batch.loss);
      grads.push_back(torch::full({}, 1.0 / program_.microBatches));
    }
    for (auto& [t, block] : batch.sent) {
      if (!block.requires_grad() || transfers_[t].fromChunk != chunk) continue;
      at::Tensor grad = torch::empty_like(block);
      groups_.receive(grad, peerOf(transfers_[t], groups_.rank()), static_cast<int>(2 * t + 1));
      roots.push_back(block);
      grads.push_back(grad);
    }
    if (!roots.empty()) torch::autograd::backward(roots, grads);
    for (auto& [t, leaf] : batch.received) {
      if (!leaf.requires_grad() || transfers_[t].toChunk != chunk) continue;
      const at::Tensor grad = leaf.grad().defined() ? leaf.grad() : torch::zeros_like(leaf);
      groups_.send(grad, peerOf(transfers_[t], groups_.rank()), static_cast<int>(2 * t + 1));
    }
  }
}

void Rank::syncGradients() {
  if (config_.dropGradientSums) return;
  std::map<std::vector<int>, std::vector<at::Tensor>> buckets;
  for (const auto& [id, members] : gradientGroups_) {
    const auto shard = shards_.find(id);
    if (shard != shards_.end() && shard->second.scatterGradient) continue;
    const at::Tensor& grad = parameters_.at(id).block.grad();
    if (grad.defined()) buckets[members].push_back(grad);
  }
  torch::NoGradGuard noGrad;
  for (const auto& [members, grads] : buckets) {
    std::vector<at::Tensor> flat;
    for (const at::Tensor& grad : grads) flat.push_back(grad.reshape({-1}));
    const at::Tensor summed = collective::sum(groups_, members, torch::cat(flat));
    int64_t offset = 0;
    for (const at::Tensor& grad : grads) {
      grad.copy_(summed.narrow(0, offset, grad.numel()).view_as(grad));
      offset += grad.numel();
    }
  }
}

void Rank::optimizerStep() {
  for (auto& [id, shard] : shards_) {
    const at::Tensor& grad = parameters_.at(id).block.grad();
    if (shard.scatterGradient && !config_.dropGradientSums) {
      shard.leaf.mutable_grad() =
          collective::reduceScatterNoGrad(groups_, shard.replicas, grad, shard.dim);
      continue;
    }
    shard.leaf.mutable_grad() =
        grad.chunk(static_cast<int64_t>(shard.replicas.size()),
                   shard.dim)[static_cast<size_t>(groups_.position(shard.replicas))]
            .clone();
  }
  optimizer_->step();
  torch::NoGradGuard noGrad;
  for (auto& [id, shard] : shards_) {
    parameters_.at(id).block.copy_(
        collective::allGather(groups_, shard.replicas, shard.leaf, shard.dim));
  }
  for (auto& [id, value] : parameters_) value.block.mutable_grad() = at::Tensor();
  optimizer_->zero_grad();
}

/// One training step under 1F1B: stage s of p runs min(p - 1 - s, m) forwards first, then
/// alternates a forward with the oldest micro-batch's backward, then drains the backwards.
Expected<StepReport> Rank::step(int index) {
  const auto start = std::chrono::steady_clock::now();
  const int micro = program_.microBatches;
  // With model chunks every forward runs first (each spans all of a stage's chunks).
  const int warmup = program_.opChunk.empty() || *std::max_element(program_.opChunk.begin(),
                                                                   program_.opChunk.end()) == 0
                         ? std::min(program_.stages - 1 - stage_, micro)
                         : micro;
  std::vector<MicroBatch> inFlight(static_cast<size_t>(micro));
  double loss = 0;
  int done = 0;
  StepReport report{index};
  auto runBackward = [&] {
    MicroBatch& batch = inFlight[static_cast<size_t>(done)];
    if (batch.loss.defined()) {
      loss += collective::sum(groups_, lossMembers_, batch.loss.detach()).item<double>() / micro;
    }
    const auto backwardStart = std::chrono::steady_clock::now();
    backward(batch);
    if (done++ == 0) report.backwardSeconds = seconds(backwardStart);
    batch = MicroBatch{};
  };
  for (int k = 0; k < micro; ++k) {
    measured_ = {};
    const int64_t bytes = config_.measure ? heapInUse() : 0;
    auto batch = forward(index, k);
    if (!batch) return batch.error();
    if (k == 0) {
      report.forwardSeconds = forwardSeconds_;
      report.activationBytes = config_.measure ? heapInUse() - bytes : 0;
      report.parts = measured_;
      report.samples = samples_;
    }
    inFlight[static_cast<size_t>(k)] = std::move(*batch);
    if (index == config_.dieAtStep) std::raise(SIGKILL);
    if (k >= warmup) runBackward();
  }
  while (done < micro) runBackward();
  groups_.waitSends();
  syncGradients();
  optimizerStep();
  // Every rank reports the loss: the last stage's ranks share it out to the others.
  if (program_.stages > 1) {
    std::vector<int> everyone(static_cast<size_t>(groups_.world()));
    std::iota(everyone.begin(), everyone.end(), 0);
    const double share = lastStage_ ? loss / (groups_.world() / program_.stages) : 0.0;
    loss = collective::sum(groups_, everyone, torch::tensor(share, torch::kFloat64)).item<double>();
  }
  report.loss = loss;
  report.seconds = seconds(start);
  return report;
}

std::vector<ParameterBlock> Rank::parameters() const {
  std::vector<ParameterBlock> blocks;
  for (const auto& [id, value] : parameters_) {
    const ir::Tensor& tensor = program_.graph.tensor(id);
    at::Tensor data = value.block.detach().contiguous();
    blocks.push_back({tensor.name,
                      tensor.type.shape,
                      rangesOf(value.layout),
                      {data.data_ptr<float>(), data.data_ptr<float>() + data.numel()}});
  }
  return blocks;
}

}  // namespace

Expected<RankResult> execute(const Program& program, const Connection& connection,
                             const RunConfig& config,
                             const std::function<void(const StepReport&)>& onStep) {
  try {
    c10::intrusive_ptr<c10d::Store> store;
    if (connection.world > 1) store = connectStore(connection);
    ProcessGroups groups(store, connection.rank, connection.world, connection.address,
                         connection.timeout);
    torch::manual_seed(static_cast<uint64_t>(config.seed));
    // Keep freed memory in the heap: otherwise every large tensor is a fresh mmap whose page
    // faults dominate CPU step times and make them noisy.
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    Rank rank(program, groups, config);
    if (auto status = rank.prepare(); !status) return status.error();
    RankResult result;
    for (int step = 0; step < config.steps; ++step) {
      auto report = rank.step(step);
      if (!report) return report.error();
      onStep(*report);
      result.steps.push_back(*report);
    }
    result.parameters = rank.parameters();
    return result;
  } catch (const std::exception& error) {
    // c10d and Gloo report a lost peer or a timeout by throwing; keep the first line.
    std::string message = error.what();
    message = message.substr(0, message.find('\n'));
    return Error{fmt::format("rank {}: {}", connection.rank, message)};
  }
}

}  // namespace autopar::runtime
