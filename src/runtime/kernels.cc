#include "runtime/kernels.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace autopar::runtime {

namespace {

using ir::OpKind;

at::Tensor matmul(const ir::OpAttrs& attrs, at::Tensor a, at::Tensor b) {
  if (attrs.transposeA) a = a.transpose(-1, -2);
  if (attrs.transposeB) b = b.transpose(-1, -2);
  return torch::matmul(a, b);
}

/// Head dim of a packed [b, s, heads*d] tensor: the full hidden size over the full head count.
int64_t headDim(const KernelContext& context, size_t input, int64_t heads) {
  const ir::Tensor& tensor = context.graph.tensor(context.op.inputs[input]);
  return tensor.type.shape.at(2) / heads;
}

/// Rotates pairs (i, i + d/2) of every head by position * 10000^(-2i/d) (GPT-NeoX's layout).
at::Tensor rotary(const KernelContext& context, const at::Tensor& x) {
  const int64_t d = headDim(context, 0, context.op.attrs.numHeads);
  const int64_t half = d / 2;
  const auto [first, last] = context.inputRanges[0][1];
  auto positions = torch::arange(first, last, torch::kFloat32).unsqueeze(1);
  auto frequencies = torch::pow(10000.0, -torch::arange(0, half, torch::kFloat32) * 2.0 / d);
  auto angles = positions * frequencies.unsqueeze(0);  // [s, d/2]
  auto cos = angles.cos();
  auto sin = angles.sin();
  auto heads = x.reshape({x.size(0), x.size(1), -1, d});
  auto x1 = heads.narrow(3, 0, half);
  auto x2 = heads.narrow(3, half, half);
  cos = cos.unsqueeze(1);  // [s, 1, d/2] broadcasts over batch and heads
  sin = sin.unsqueeze(1);
  auto rotated = torch::cat({x1 * cos - x2 * sin, x1 * sin + x2 * cos}, 3);
  return rotated.reshape(x.sizes());
}

/// Causal or full softmax attention on this rank's heads; query head j reads kv head
/// j / (hq / hk).
at::Tensor attention(const KernelContext& context, const std::vector<at::Tensor>& in) {
  const auto& attrs = context.op.attrs;
  const int64_t kvHeads = attrs.numKvHeads > 0 ? attrs.numKvHeads : attrs.numHeads;
  const int64_t d = headDim(context, 0, attrs.numHeads);
  auto split = [&](const at::Tensor& t) {
    return t.reshape({t.size(0), t.size(1), -1, d}).transpose(1, 2);  // [b, heads, s, d]
  };
  auto q = split(in[0]);
  auto k = split(in[1]);
  auto v = split(in[2]);
  const int64_t group = attrs.numHeads / kvHeads;
  if (group > 1) {
    k = k.repeat_interleave(group, 1);
    v = v.repeat_interleave(group, 1);
  }
  auto scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(d));
  if (attrs.causal) {
    const auto [q0, q1] = context.inputRanges[0][1];
    const auto [k0, k1] = context.inputRanges[1][1];
    auto rows = torch::arange(q0, q1, torch::kInt64).unsqueeze(1);
    auto cols = torch::arange(k0, k1, torch::kInt64).unsqueeze(0);
    scores = scores.masked_fill(cols > rows, -std::numeric_limits<float>::infinity());
  }
  auto out = torch::matmul(torch::softmax(scores, -1), v);  // [b, heads, s, d]
  return out.transpose(1, 2).reshape({in[0].size(0), in[0].size(1), -1});
}

/// Embedding lookup of the rows this rank holds; indices outside them give zeros (the output is
/// then a partial sum over the row cut).
at::Tensor gather(const KernelContext& context, const at::Tensor& table,
                  const at::Tensor& indices) {
  const auto [first, last] = context.inputRanges[0][0];
  auto mine = (indices >= first) & (indices < last);
  auto local = (indices - first).clamp(0, last - first - 1);
  auto rows = torch::embedding(table, local);
  auto mask = mine.to(table.scalar_type());
  for (int64_t i = indices.dim(); i < rows.dim(); ++i) mask = mask.unsqueeze(-1);
  return rows * mask;
}

/// The members of the group along the device-matrix axis of `factor`, or this rank alone.
std::vector<int> factorGroup(const KernelContext& context, int factor) {
  const int axis = context.sharded.factorAxis.at(static_cast<size_t>(factor));
  if (axis < 0) return {context.groups.rank()};
  const std::vector<int> axes{axis};
  return context.sharded.matrix.group(context.position, axes);
}

/// Mean token loss, vocab-parallel when the vocab is cut (Megatron-LM's cross-entropy): the row
/// max, the sum of exponentials and the target logit are all-reduced over the vocab group. Each
/// rank divides its tokens' sum by the full token count, so ranks with different tokens hold
/// partial sums of the mean.
at::Tensor crossEntropy(const KernelContext& context, const at::Tensor& logits,
                        const at::Tensor& labels) {
  std::vector<int> vocab{context.groups.rank()};
  if (!context.rule.internal.empty()) vocab = factorGroup(context, context.rule.internal[0].factor);
  const auto [first, last] = context.inputRanges[0].back();
  auto shift = collective::maxNoGrad(context.groups, vocab, std::get<0>(logits.max(-1)));
  auto shifted = logits - shift.unsqueeze(-1);
  auto sumExp = collective::sum(context.groups, vocab, shifted.exp().sum(-1));
  auto mine = ((labels >= first) & (labels < last)).to(logits.scalar_type());
  auto local = (labels - first).clamp(0, last - first - 1).unsqueeze(-1);
  auto target =
      collective::sum(context.groups, vocab, shifted.gather(-1, local).squeeze(-1) * mine);
  const ir::Shape& fullLabels = context.graph.tensor(context.op.inputs[1]).type.shape;
  int64_t tokens = 1;
  for (int64_t size : fullLabels) tokens *= size;
  return (sumExp.log() - target).sum() / static_cast<double>(tokens);
}

at::Tensor reduce(const KernelContext& context, const at::Tensor& x) {
  const auto& attrs = context.op.attrs;
  std::vector<int64_t> axes = attrs.axes;
  if (axes.empty()) {
    for (int64_t i = 0; i < x.dim(); ++i) axes.push_back(i);
  }
  if (context.op.kind == OpKind::kReduceMax) return x.amax(axes, attrs.keepDims);
  auto total = x.sum(axes, attrs.keepDims);
  if (context.op.kind != OpKind::kReduceMean) return total;
  const ir::Shape& full = context.graph.tensor(context.op.inputs[0]).type.shape;
  int64_t count = 1;
  for (int64_t axis : axes) count *= full.at(static_cast<size_t>(axis < 0 ? axis + x.dim() : axis));
  return total / static_cast<double>(count);
}

at::Tensor slice(const KernelContext& context, const at::Tensor& x) {
  const auto& attrs = context.op.attrs;
  at::Tensor out = x;
  for (size_t dim = 0; dim < attrs.starts.size(); ++dim) {
    const auto [lo, hi] = context.inputRanges[0][dim];
    const int64_t start = std::max(attrs.starts[dim], lo) - lo;
    const int64_t end = std::min(attrs.ends[dim], hi) - lo;
    out = out.narrow(static_cast<int64_t>(dim), start, std::max<int64_t>(end - start, 0));
  }
  return out;
}

/// Dropout with a mask drawn over the whole output and cut to this rank's block, so every plan
/// drops the same elements.
at::Tensor dropout(const KernelContext& context, const at::Tensor& x) {
  const double rate = context.op.attrs.dropoutRate;
  if (rate <= 0) return x;
  const ir::Shape& full = context.graph.tensor(context.op.outputs[0]).type.shape;
  auto keep = torch::bernoulli(torch::full(full, 1.0 - rate),
                               generatorFor(context.seed, context.op.name, context.step));
  for (size_t dim = 0; dim < context.outputRanges.size(); ++dim) {
    const auto [lo, hi] = context.outputRanges[dim];
    keep = keep.narrow(static_cast<int64_t>(dim), lo, hi - lo);
  }
  return x * keep / (1.0 - rate);
}

at::Tensor unary(OpKind kind, const at::Tensor& x) {
  switch (kind) {
    case OpKind::kReLU:
      return torch::relu(x);
    case OpKind::kGeLU:
      return torch::gelu(x);
    case OpKind::kSiLU:
      return torch::silu(x);
    case OpKind::kTanh:
      return torch::tanh(x);
    case OpKind::kSigmoid:
      return torch::sigmoid(x);
    case OpKind::kExp:
      return torch::exp(x);
    case OpKind::kNeg:
      return -x;
    case OpKind::kSqrt:
      return torch::sqrt(x);
    // The runtime computes in fp32 (the check compares fp32 runs), so a cast keeps the value.
    case OpKind::kCast:
      return x;
    default:
      throw std::logic_error("not a unary op");
  }
}

}  // namespace

at::Generator generatorFor(uint64_t seed, const std::string& name, int step) {
  uint64_t hash = 14695981039346656037ULL;  // FNV-1a over the name, then the seed and step
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ULL;
  hash ^= seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(step) * 0xBF58476D1CE4E5B9ULL;
  return at::detail::createCPUGenerator(hash);
}

at::Tensor runKernel(const KernelContext& context, const std::vector<at::Tensor>& in) {
  const ir::Op& op = context.op;
  switch (op.kind) {
    case OpKind::kMatMul:
    case OpKind::kBatchMatMul:
      return matmul(op.attrs, in[0], in[1]);
    case OpKind::kAdd:
      return in[0] + in[1];
    case OpKind::kSub:
      return in[0] - in[1];
    case OpKind::kMul:
      return in[0] * in[1];
    case OpKind::kDiv:
      return in[0] / in[1];
    case OpKind::kReLU:
    case OpKind::kGeLU:
    case OpKind::kSiLU:
    case OpKind::kTanh:
    case OpKind::kSigmoid:
    case OpKind::kExp:
    case OpKind::kNeg:
    case OpKind::kSqrt:
    case OpKind::kCast:
      return unary(op.kind, in[0]);
    case OpKind::kDropout:
      return dropout(context, in[0]);
    case OpKind::kSoftmax:
      return torch::softmax(in[0], op.attrs.axis);
    case OpKind::kLayerNorm:
      return torch::layer_norm(in[0], {in[0].size(-1)}, in[1], in[2], op.attrs.epsilon);
    case OpKind::kRMSNorm:
      return in[0] * torch::rsqrt(in[0].pow(2).mean(-1, true) + op.attrs.epsilon) * in[1];
    case OpKind::kReduceSum:
    case OpKind::kReduceMean:
    case OpKind::kReduceMax:
      return reduce(context, in[0]);
    case OpKind::kGather:
      return gather(context, in[0], in[1]);
    case OpKind::kReshape: {
      std::vector<int64_t> shape;
      for (const auto& [lo, hi] : context.outputRanges) shape.push_back(hi - lo);
      return in[0].reshape(shape);
    }
    case OpKind::kTranspose:
      return in[0].permute(op.attrs.perm);
    case OpKind::kConcat:
      return torch::cat(in, op.attrs.axis);
    case OpKind::kSlice:
      return slice(context, in[0]);
    case OpKind::kFlashAttention:
      return attention(context, in);
    case OpKind::kRotary:
      return rotary(context, in[0]);
    case OpKind::kCrossEntropy:
      return crossEntropy(context, in[0], in[1]);
    case OpKind::kMoEDispatch:
    case OpKind::kMoECombine:
      // Planned and costed under balanced routing; running them needs real routing, whose
      // token counts per expert vary, so the sharded run would not match the serial one.
      throw std::invalid_argument(
          fmt::format("{}: mixture-of-experts ops are planned and costed, not run yet", op.name));
    case OpKind::kOpaque:
      // An ONNX op autopar does not know: planned replicated, but there is nothing to run
      // (planner/runnable_plan.cc refuses such plans before any rank starts).
      throw std::invalid_argument(
          fmt::format("{}: ONNX {} is planned replicated, not run", op.name, op.attrs.opaqueType));
  }
  throw std::logic_error(fmt::format("{}: no kernel for this op kind", op.name));
}

}  // namespace autopar::runtime
