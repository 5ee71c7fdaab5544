#include "cost/activations.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "cost/op_cost.h"

namespace autopar::cost {

namespace {

/// Union-find over ops, for connected sets of op-flagged recompute (hand-written: a few lines,
/// no library in DESIGN.md's list offers it).
int findRoot(std::vector<int>& parent, int op) {
  while (parent[static_cast<size_t>(op)] != op) {
    parent[static_cast<size_t>(op)] = parent[static_cast<size_t>(parent[static_cast<size_t>(op)])];
    op = parent[static_cast<size_t>(op)];
  }
  return op;
}

}  // namespace

RecomputeRegions recomputeRegions(const ir::Graph& graph, const RecomputeOptions& options) {
  const auto& ops = graph.ops();
  const ir::Recompute layers = options.layers;
  const bool opPolicy = layers == ir::Recompute::kSelective && options.selectiveOpPolicy;
  RecomputeRegions regions;
  regions.regionOf.assign(ops.size(), -1);
  regions.dropsOutput.assign(ops.size(), false);
  regions.keepsOutput.assign(ops.size(), false);
  std::map<std::string, int> blockRegion;
  std::map<std::string, int> matmulsSeen;  ///< per layer, under the per-op policy
  std::vector<int> parent(ops.size());
  std::iota(parent.begin(), parent.end(), 0);
  for (const ir::Op& op : ops) {
    const bool wholeLayer = layers == ir::Recompute::kFull || opPolicy;
    const bool blockRecompute =
        graph.settingsOf(op).recompute || (wholeLayer && ir::isStackLayer(op.block));
    if (blockRecompute) {
      auto [it, added] = blockRegion.emplace(op.block, regions.count);
      if (added) ++regions.count;
      regions.regionOf[static_cast<size_t>(op.id)] = it->second;
      if (opPolicy && ir::isStackLayer(op.block)) {
        const bool matmul = ir::familyOf(op.kind) == ir::OpFamily::kMatMul;
        const bool oddMatmul = matmul && ++matmulsSeen[op.block] % 2 == 1;
        regions.keepsOutput[static_cast<size_t>(op.id)] = oddMatmul || ir::isAttentionCore(op.kind);
      }
    } else if (op.recompute) {
      regions.dropsOutput[static_cast<size_t>(op.id)] = true;
      for (ir::TensorId input : op.inputs) {
        const ir::OpId producer = graph.tensor(input).producer;
        if (producer != ir::kNoOp && regions.dropsOutput[static_cast<size_t>(producer)]) {
          parent[static_cast<size_t>(findRoot(parent, op.id))] = findRoot(parent, producer);
        }
      }
    } else if (layers == ir::Recompute::kSelective && ir::isAttentionCore(op.kind)) {
      regions.regionOf[static_cast<size_t>(op.id)] = regions.count++;
    }
  }
  std::map<int, int> rootRegion;
  for (const ir::Op& op : ops) {
    if (!regions.dropsOutput[static_cast<size_t>(op.id)]) continue;
    auto [it, added] = rootRegion.emplace(findRoot(parent, op.id), regions.count);
    if (added) ++regions.count;
    regions.regionOf[static_cast<size_t>(op.id)] = it->second;
  }
  return regions;
}

namespace {

/// `layout` with each of its replica axes also cutting the first dim it divides: the devices
/// that held the same copy now each hold a part of it.
layout::TensorLayout slicedOverReplicas(layout::TensorLayout layout) {
  for (int axis : layout.replicaAxes()) {
    const int64_t size = layout.deviceMatrix.axisSize(axis);
    for (size_t dim = 0; dim < layout.shape.size(); ++dim) {
      if (layout.shape[dim] % (layout.cutsOfDim(static_cast<int>(dim)) * size) != 0) continue;
      layout.dimAxes[dim].push_back(axis);
      break;
    }
  }
  return layout;
}

struct Accumulator {
  const ActivationInputs& in;
  ActivationCost cost{};
  std::set<std::pair<ir::TensorId, int>> counted{};  ///< (tensor, stage)
  /// (tensor, stage) -> the layouts its replayed forward redistribution was charged into.
  std::map<std::pair<ir::TensorId, int>, std::vector<layout::TensorLayout>> replayed{};

  int64_t bytesOf(const layout::TensorLayout& layout, ir::TensorId tensor,
                  std::optional<ir::DType> keptAs = std::nullopt) const {
    return layout.sliceElements() *
           ir::dtypeBytes(keptAs.value_or(in.graph.tensor(tensor).type.dtype));
  }

  /// Keeps `tensor` as `use` needs it on `stage` (in `keptAs` when the op keeps a converted
  /// copy); `stash` allows keeping the smaller source slice and gathering it again in backward.
  /// With `sliced` (RecomputeOptions::sliceActivation) what is held is split over its replicas
  /// and gathered back before the backward needs it.
  void keep(ir::TensorId tensor, const layout::TensorLayout& use, int stage, bool stash,
            std::optional<ir::DType> keptAs = std::nullopt, bool sliced = false) {
    if (!counted.insert({tensor, stage}).second) return;
    const layout::TensorLayout& source = in.sources[static_cast<size_t>(tensor)];
    const bool fromSource = stash && bytesOf(source, tensor, keptAs) < bytesOf(use, tensor, keptAs);
    const layout::TensorLayout& held = fromSource ? source : use;
    auto s = static_cast<size_t>(stage);
    if (fromSource) cost.replaySeconds[s] += in.forwardSeconds(tensor, use);
    if (!sliced) {
      cost.bytes[s] += bytesOf(held, tensor, keptAs);
      return;
    }
    const layout::TensorLayout slices = slicedOverReplicas(held);
    cost.bytes[s] += bytesOf(slices, tensor, keptAs);
    if (!(slices == held)) cost.replaySeconds[s] += in.redistributionSeconds(tensor, slices, held);
  }

  /// An optimizer-parallel parameter a consumer saves: its gathered copy, or `replays` gathers
  /// again in backward.
  void keepParameter(ir::TensorId tensor, const layout::TensorLayout& use, int stage, int replays) {
    const layout::TensorLayout& storage = in.sources[static_cast<size_t>(tensor)];
    if (storage == use.withoutPartial()) return;
    if (!counted.insert({tensor, stage}).second) return;
    auto s = static_cast<size_t>(stage);
    if (replays > 0) {
      const double seconds = replays * in.forwardSeconds(tensor, use);
      cost.replaySeconds[s] += seconds;
      cost.parameterReplaySeconds[s] += seconds;
    } else {
      cost.gatheredParameters[s] += bytesOf(use, tensor);
    }
  }

  /// RecomputeOptions::rootStaysGathered: the gathered copies of the parameters outside the
  /// stack's layers and of each stage's last layer, each once, before any consumer asks to
  /// gather them again.
  void keepRootParameters() {
    if (!in.options.parallelOptimizerRegather || !in.options.rootStaysGathered) return;
    std::vector<std::string> lastLayer(static_cast<size_t>(in.stages));
    for (const ir::Op& op : in.graph.ops()) {
      if (ir::isStackLayer(op.block)) {
        lastLayer[static_cast<size_t>(in.stageOf[static_cast<size_t>(op.id)])] = op.block;
      }
    }
    for (const ir::Op& op : in.graph.ops()) {
      const auto stage = static_cast<size_t>(in.stageOf[static_cast<size_t>(op.id)]);
      if (ir::isStackLayer(op.block) && op.block != lastLayer[stage]) continue;
      const rules::ShardedOp& shard = in.sharded[static_cast<size_t>(op.id)];
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (!in.graph.tensor(op.inputs[i]).isParameter()) continue;
        keepParameter(op.inputs[i], shard.inputs[i], static_cast<int>(stage), 0);
      }
    }
  }

  /// A tensor made and used inside a recomputed region is made again; so is any communication
  /// between the two (replayed under mp_comm_recompute, else its output is kept).
  /// The forward sends each tensor once per layout its consumers read it in (q, k and v share
  /// one gather of the norm's output), and the replay sends it again as often.
  void insideRegion(ir::TensorId tensor, const layout::TensorLayout& use, int stage) {
    const double seconds = in.forwardSeconds(tensor, use);
    if (seconds == 0) return;
    if (in.options.mpCommRecompute) {
      std::vector<layout::TensorLayout>& sent = replayed[{tensor, stage}];
      if (std::find(sent.begin(), sent.end(), use) != sent.end()) return;
      sent.push_back(use);
      cost.replaySeconds[static_cast<size_t>(stage)] += seconds;
    } else {
      keep(tensor, use, stage, false);
    }
  }

  void recomputedOp(const ir::Op& op, int region, int stage) {
    const rules::ShardedOp& shard = in.sharded[static_cast<size_t>(op.id)];
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const ir::TensorId t = op.inputs[i];
      const ir::Tensor& tensor = in.graph.tensor(t);
      if (tensor.isParameter()) {
        keepParameter(t, shard.inputs[i], stage,
                      int{in.options.parallelOptimizerCommRecompute} +
                          int{in.options.parallelOptimizerRegather});
        continue;
      }
      const ir::OpId producer = tensor.producer;
      if (producer != ir::kNoOp && in.regions.regionOf[static_cast<size_t>(producer)] == region) {
        insideRegion(t, shard.inputs[i], stage);
        continue;
      }
      if (producer != ir::kNoOp && in.regions.dropsOutput[static_cast<size_t>(producer)]) continue;
      keep(t, shard.inputs[i], stage, in.options.mpCommRecompute, std::nullopt,
           in.options.sliceActivation);
    }
  }

  /// Whether the fused kernel reading `tensor` makes it again in the backward (see "Fused
  /// chains" in activations.h): it stays inside the kernel, and an activation made it from an
  /// input the activation keeps.
  bool remadeInFusedKernel(ir::TensorId tensor) const {
    const auto t = static_cast<size_t>(tensor);
    if (t >= in.inFusedKernel.size() || !in.inFusedKernel[t]) return false;
    const ir::Op& producer = in.graph.op(in.graph.tensor(tensor).producer);
    if (ir::familyOf(producer.kind) != ir::OpFamily::kElementwiseUnary) return false;
    const auto& saved = in.graph.backwardRule(producer).saved;
    return std::any_of(saved.begin(), saved.end(), [](const ir::SavedTensor& kept) {
      return kept.source == ir::SavedTensor::Source::kInput;
    });
  }

  void keptOp(const ir::Op& op, int stage) {
    const rules::ShardedOp& shard = in.sharded[static_cast<size_t>(op.id)];
    for (const ir::SavedTensor& saved : in.graph.backwardRule(op).saved) {
      using Source = ir::SavedTensor::Source;
      if (saved.source == Source::kExtra) {
        const auto& output = in.graph.tensor(op.outputs.front()).type;
        const double share = static_cast<double>(shard.outputs.front().sliceElements()) /
                             static_cast<double>(ir::numElements(output.shape));
        cost.bytes[static_cast<size_t>(stage)] +=
            static_cast<int64_t>(static_cast<double>(saved.bytes) * share);
        continue;
      }
      if (saved.source == Source::kOutput) {
        const ir::TensorId t = op.outputs[saved.index];
        keep(t, shard.outputs[saved.index].withoutPartial(), stage, false, saved.keptAs);
        continue;
      }
      const ir::TensorId t = op.inputs[saved.index];
      const ir::Tensor& tensor = in.graph.tensor(t);
      if (tensor.isParameter()) {
        keepParameter(t, shard.inputs[saved.index], stage,
                      int{in.options.parallelOptimizerRegather});
        continue;
      }
      if (tensor.producer != ir::kNoOp &&
          in.regions.dropsOutput[static_cast<size_t>(tensor.producer)]) {
        continue;
      }
      if (remadeInFusedKernel(t)) continue;
      // DTensor's GEMMs keep the gathered input; every other consumer stashes as before.
      const bool stash = in.stashGatheredInputs || ir::familyOf(op.kind) != ir::OpFamily::kMatMul;
      keep(t, shard.inputs[saved.index], stage, stash, saved.keptAs);
    }
  }
};

/// Whether the backward of `region` needs `tensor`, made inside it: a backward there saves it
/// (its producer's as an output, a consumer's as an input), or a consumer there is made again
/// from it and that consumer's output is needed in turn (the rotary a saved query feeds). A
/// reader outside the region keeps the tensor as its own input (Accumulator::keep).
bool neededInRegion(const ActivationInputs& in, ir::TensorId tensor, int region) {
  using Source = ir::SavedTensor::Source;
  const ir::Tensor& t = in.graph.tensor(tensor);
  const ir::Op& producer = in.graph.op(t.producer);
  for (const ir::SavedTensor& saved : in.graph.backwardRule(producer).saved) {
    if (saved.source == Source::kOutput && producer.outputs[saved.index] == tensor) return true;
  }
  for (ir::OpId consumer : t.consumers) {
    if (in.regions.regionOf[static_cast<size_t>(consumer)] != region) continue;
    const ir::Op& reader = in.graph.op(consumer);
    for (const ir::SavedTensor& saved : in.graph.backwardRule(reader).saved) {
      if (saved.source == Source::kInput && reader.inputs[saved.index] == tensor) return true;
    }
    if (!in.regions.keepsOutput[static_cast<size_t>(consumer)] &&
        neededInRegion(in, reader.outputs.front(), region)) {
      return true;
    }
  }
  return false;
}

}  // namespace

ActivationCost keptActivations(const ActivationInputs& inputs) {
  const auto stages = static_cast<size_t>(inputs.stages);
  Accumulator acc{.in = inputs};
  acc.cost.bytes.assign(stages, 0);
  acc.cost.gatheredParameters.assign(stages, 0);
  acc.cost.replaySeconds.assign(stages, 0.0);
  acc.cost.parameterReplaySeconds.assign(stages, 0.0);
  acc.keepRootParameters();
  for (const ir::Op& op : inputs.graph.ops()) {
    const int stage = inputs.stageOf[static_cast<size_t>(op.id)];
    const int region = inputs.regions.regionOf[static_cast<size_t>(op.id)];
    if (region >= 0) {
      acc.recomputedOp(op, region, stage);
      if (inputs.regions.keepsOutput[static_cast<size_t>(op.id)] &&
          (!inputs.options.policyKeepsOnlyRead ||
           neededInRegion(inputs, op.outputs.front(), region))) {
        const rules::ShardedOp& shard = inputs.sharded[static_cast<size_t>(op.id)];
        acc.keep(op.outputs.front(), shard.outputs.front().withoutPartial(), stage, false);
      }
    } else {
      acc.keptOp(op, stage);
    }
  }
  return std::move(acc.cost);
}

std::vector<int64_t> backwardWorkspace(const ActivationInputs& inputs, bool inPlaceLossGradient,
                                       bool ringMergesInFp32) {
  const ir::Graph& graph = inputs.graph;
  const RecomputeRegions& regions = inputs.regions;
  std::vector<int64_t> workspace(static_cast<size_t>(inputs.stages), 0);
  std::vector<int64_t> regionBytes(static_cast<size_t>(regions.count), 0);
  for (const ir::Op& op : graph.ops()) {
    const auto id = static_cast<size_t>(op.id);
    const rules::ShardedOp& shard = inputs.sharded[id];
    int64_t& slot = workspace[static_cast<size_t>(inputs.stageOf[id])];
    if (op.kind == ir::OpKind::kCrossEntropy) {
      const ir::Tensor& logits = graph.tensor(op.inputs.front());
      const layout::TensorLayout& slice = shard.inputs.front();
      // PyTorch on logits whose vocabulary is sharded is DTensor's loss_parallel: its fused
      // backward (torch/distributed/tensor/parallel/loss.py, _nll_loss_and_log_softmax_backward)
      // holds zeros_like(x), exp(x) and their sum at once, then the product: three fp32 buffers.
      const bool vocabSharded = slice.sliceShape().back() < logits.type.shape.back();
      const int64_t fp32Buffers = vocabSharded ? 3 : 2;
      // Megatron's in-place gradient and flash-attn's fused kernel write one gradient in the
      // logits' dtype.
      const int64_t perElement = inPlaceLossGradient || op.attrs.fusedLoss
                                     ? ir::dtypeBytes(logits.type.dtype)
                                     : fp32Buffers * 4;
      if (op.attrs.lossChunks > 0) {
        // A chunked loss holds one chunk's logits, their fp32 copy and its backward's buffers
        // at a time (torchtitan's ChunkedLossWrapper runs F.cross_entropy(logits.float()) and
        // its backward on each chunk before making the next).
        const int64_t chunk =
            (slice.sliceElements() + op.attrs.lossChunks - 1) / op.attrs.lossChunks;
        slot = std::max(slot, chunk * (ir::dtypeBytes(logits.type.dtype) + 4 + fp32Buffers * 4));
      } else {
        slot = std::max(slot, slice.sliceElements() * perElement);
      }
    }
    // PyTorch's context parallelism holds its ring buffers inside the attention's backward,
    // while what its recomputed region made up to the attention is still alive.
    const auto ringBytes =
        static_cast<int64_t>(ringMergesInFp32 ? ringMergeBytes(op, shard).backwardWorkspace : 0.0);
    const int region = regions.regionOf[id];
    if (region < 0 || regions.keepsOutput[id]) {
      slot = std::max(slot, ringBytes);
      continue;
    }
    int64_t& made = regionBytes[static_cast<size_t>(region)];
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      made +=
          shard.outputs[i].sliceElements() * ir::dtypeBytes(graph.tensor(op.outputs[i]).type.dtype);
    }
    slot = std::max(slot, made + ringBytes);
  }
  return workspace;
}

}  // namespace autopar::cost
