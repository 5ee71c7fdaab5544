#include "runtime/process_groups.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

namespace autopar::runtime {

ProcessGroups::ProcessGroups(c10::intrusive_ptr<c10d::Store> store, int rank, int world,
                             std::string address, std::chrono::milliseconds timeout)
    : store_(std::move(store)),
      rank_(rank),
      world_(world),
      address_(std::move(address)),
      timeout_(timeout) {}

int ProcessGroups::position(const std::vector<int>& members) const {
  const auto at = std::find(members.begin(), members.end(), rank_);
  if (at == members.end()) throw std::logic_error("rank is not a member of its collective's group");
  return static_cast<int>(at - members.begin());
}

c10::intrusive_ptr<c10d::ProcessGroupGloo> ProcessGroups::group(const std::vector<int>& members) {
  auto found = groups_.find(members);
  if (found != groups_.end()) return found->second;
  std::string prefix = "group";
  for (int member : members) prefix += "-" + std::to_string(member);
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->timeout = timeout_;
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(address_));
  auto created = c10::make_intrusive<c10d::ProcessGroupGloo>(
      c10::make_intrusive<c10d::PrefixStore>(prefix, store_), position(members),
      static_cast<int>(members.size()), options);
  groups_.emplace(members, created);
  return created;
}

c10::intrusive_ptr<c10d::ProcessGroupGloo> ProcessGroups::everyone() {
  std::vector<int> ranks(static_cast<size_t>(world_));
  std::iota(ranks.begin(), ranks.end(), 0);
  return group(ranks);
}

void ProcessGroups::send(const at::Tensor& tensor, int to, int tag) {
  std::vector<at::Tensor> buffer{tensor.detach().contiguous()};
  pendingSends_.emplace_back(buffer[0], everyone()->send(buffer, to, tag));
}

void ProcessGroups::receive(at::Tensor& tensor, int from, int tag) {
  std::vector<at::Tensor> buffer{tensor};
  everyone()->recv(buffer, from, tag)->wait();
}

void ProcessGroups::waitSends() {
  for (auto& [tensor, work] : pendingSends_) work->wait();
  pendingSends_.clear();
}

namespace collective {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Autograd contexts keep IValues only; the groups outlive every graph, so their address rides
/// as an integer.
int64_t handle(ProcessGroups& groups) { return reinterpret_cast<int64_t>(&groups); }
ProcessGroups& groupsOf(AutogradContext* ctx) {
  return *reinterpret_cast<ProcessGroups*>(ctx->saved_data["groups"].toInt());
}
std::vector<int> membersOf(AutogradContext* ctx) {
  const auto list = ctx->saved_data["members"].toIntVector();
  return {list.begin(), list.end()};
}
void save(AutogradContext* ctx, ProcessGroups& groups, const std::vector<int>& members) {
  ctx->saved_data["groups"] = handle(groups);
  ctx->saved_data["members"] = std::vector<int64_t>(members.begin(), members.end());
}

at::Tensor allReduce(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x,
                     c10d::ReduceOp op) {
  std::vector<at::Tensor> buffer{x.detach().clone().contiguous()};
  c10d::AllreduceOptions options;
  options.reduceOp = op;
  groups.group(members)->allreduce(buffer, options)->wait();
  return buffer[0];
}

at::Tensor gather(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x,
                  int64_t dim) {
  std::vector<at::Tensor> input{x.detach().contiguous()};
  std::vector<std::vector<at::Tensor>> output(1);
  for (size_t i = 0; i < members.size(); ++i) output[0].push_back(torch::empty_like(input[0]));
  groups.group(members)->allgather(output, input)->wait();
  return torch::cat(output[0], dim);
}

at::Tensor block(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x,
                 int64_t dim) {
  const int64_t parts = static_cast<int64_t>(members.size());
  return x.chunk(parts, dim)[static_cast<size_t>(groups.position(members))].contiguous();
}

/// Reduce-scatter as one all-to-all of the blocks and a local sum: ProcessGroupGloo in LibTorch
/// 1.13 has no reduce_scatter. Each rank sends (p-1)/p of the buffer, as a ring reduce-scatter.
at::Tensor scatterSum(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x,
                      int64_t dim) {
  const int64_t parts = static_cast<int64_t>(members.size());
  at::Tensor front = x.detach().movedim(dim, 0).contiguous();
  at::Tensor received = torch::empty_like(front);
  std::vector<int64_t> even;  // empty: equal splits
  groups.group(members)->alltoall_base(received, front, even, even)->wait();
  std::vector<int64_t> shape{parts, front.size(0) / parts};
  for (int64_t d = 1; d < front.dim(); ++d) shape.push_back(front.size(d));
  at::Tensor summed = received.view(shape).sum(0);  // a new tensor, not a view
  return dim == 0 ? summed : summed.movedim(0, dim).clone(at::MemoryFormat::Contiguous);
}

struct SumFunction : torch::autograd::Function<SumFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, ProcessGroups* groups,
                            const std::vector<int>* members) {
    return allReduce(*groups, *members, x, c10d::ReduceOp::SUM);
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], {}, {}};
  }
};

struct BroadcastFunction : torch::autograd::Function<BroadcastFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, ProcessGroups* groups,
                            const std::vector<int>* members) {
    save(ctx, *groups, *members);
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {allReduce(groupsOf(ctx), membersOf(ctx), grads[0], c10d::ReduceOp::SUM), {}, {}};
  }
};

/// A collective along a tensor dim, `Forward`, whose backward is the collective `Backward` on the
/// gradient along the same dim.
using DimCollective = at::Tensor (*)(ProcessGroups&, const std::vector<int>&, const at::Tensor&,
                                     int64_t);

template <DimCollective Forward, DimCollective Backward>
struct DimFunction : torch::autograd::Function<DimFunction<Forward, Backward>> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, ProcessGroups* groups,
                            const std::vector<int>* members, int64_t dim) {
    save(ctx, *groups, *members);
    ctx->saved_data["dim"] = dim;
    return Forward(*groups, *members, x, dim);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {Backward(groupsOf(ctx), membersOf(ctx), grads[0], ctx->saved_data["dim"].toInt()),
            {},
            {},
            {}};
  }
};

/// Runs Forward under autograd; a group of one rank moves nothing.
template <DimCollective Forward, DimCollective Backward>
at::Tensor alongDim(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x,
                    int64_t dim) {
  if (members.size() <= 1) return x;
  return DimFunction<Forward, Backward>::apply(x, &groups, &members, dim);
}

}  // namespace

at::Tensor allGatherSummed(ProcessGroups& groups, const std::vector<int>& members,
                           const at::Tensor& x, int64_t dim) {
  return alongDim<gather, scatterSum>(groups, members, x, dim);
}

at::Tensor reduceScatter(ProcessGroups& groups, const std::vector<int>& members,
                         const at::Tensor& x, int64_t dim) {
  return alongDim<scatterSum, gather>(groups, members, x, dim);
}

at::Tensor reduceScatterNoGrad(ProcessGroups& groups, const std::vector<int>& members,
                               const at::Tensor& x, int64_t dim) {
  if (members.size() <= 1) return x.detach();
  return scatterSum(groups, members, x, dim);
}

at::Tensor sum(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x) {
  if (members.size() <= 1) return x;
  return SumFunction::apply(x, &groups, &members);
}

at::Tensor broadcast(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x) {
  if (members.size() <= 1) return x;
  return BroadcastFunction::apply(x, &groups, &members);
}

at::Tensor allGather(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x,
                     int64_t dim) {
  return alongDim<gather, block>(groups, members, x, dim);
}

at::Tensor split(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x,
                 int64_t dim) {
  return alongDim<block, gather>(groups, members, x, dim);
}

at::Tensor maxNoGrad(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x) {
  if (members.size() <= 1) return x.detach();
  return allReduce(groups, members, x, c10d::ReduceOp::MAX);
}

}  // namespace collective

}  // namespace autopar::runtime
