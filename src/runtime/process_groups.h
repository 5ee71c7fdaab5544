#pragma once
/// \file
/// The ranks of one run and their Gloo process groups (internal to the runtime; includes LibTorch).
/// Rendezvous is a c10d store (the launcher's FileStore, or a job's TCPStore: runtime/launcher.h);
/// every group of ranks a collective runs over gets its own ProcessGroupGloo, made on first use
/// under a store prefix named after its members. All ranks run the same program, so the members of
/// a group reach its first collective together.

#include <chrono>
#include <map>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

namespace autopar::runtime {

class ProcessGroups {
 public:
  /// `store` is null for a single-process run (every group is then this rank alone).
  ProcessGroups(c10::intrusive_ptr<c10d::Store> store, int rank, int world, std::string address,
                std::chrono::milliseconds timeout);

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int world() const { return world_; }
  /// The group of `members` (sorted or not, as the collective orders them); it must hold rank().
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group(const std::vector<int>& members);
  /// Point-to-point over all ranks: `send` returns at once, and `tensor` must live until wait()
  /// is called; `receive` fills `tensor` and blocks until it arrives.
  void send(const at::Tensor& tensor, int to, int tag);
  void receive(at::Tensor& tensor, int from, int tag);
  /// Waits for every send.
  void waitSends();
  /// This rank's position in `members`.
  [[nodiscard]] int position(const std::vector<int>& members) const;

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int world_;
  std::string address_;
  std::chrono::milliseconds timeout_;
  /// The group of all ranks (point-to-point runs over it).
  c10::intrusive_ptr<c10d::ProcessGroupGloo> everyone();

  std::map<std::vector<int>, c10::intrusive_ptr<c10d::ProcessGroupGloo>> groups_;
  std::vector<std::pair<at::Tensor, c10::intrusive_ptr<c10d::Work>>> pendingSends_;
};

/// Collectives over `members` (which hold this rank) that autograd differentiates: each backward
/// is the forward's transpose under the runtime's convention that a replicated value's gradient is
/// whole on every rank that holds it (docs/runtime.md).
namespace collective {
/// Sums partial values: forward all-reduce, backward identity.
at::Tensor sum(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x);
/// A replicated value entering computation that varies over `members`: forward identity, backward
/// all-reduce (the gradients of the copies add up).
at::Tensor broadcast(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x);
/// Concatenates the members' blocks along `dim`: backward keeps this rank's block.
at::Tensor allGather(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x,
                     int64_t dim);
/// An all-gather whose result the op then uses as one of several copies (Megatron-LM's sequence
/// parallel gather): backward reduce-scatters, summing the copies' gradients and keeping this
/// rank's block in one collective.
at::Tensor allGatherSummed(ProcessGroups& groups, const std::vector<int>& members,
                           const at::Tensor& x, int64_t dim);
/// Sums partial values and keeps this rank's block of `dim`: backward all-gathers.
at::Tensor reduceScatter(ProcessGroups& groups, const std::vector<int>& members,
                         const at::Tensor& x, int64_t dim);
/// The same, outside autograd (gradients of optimizer-sharded parameters).
at::Tensor reduceScatterNoGrad(ProcessGroups& groups, const std::vector<int>& members,
                               const at::Tensor& x, int64_t dim);
/// Keeps this rank's block of `dim`: backward all-gathers the blocks' gradients.
at::Tensor split(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x,
                 int64_t dim);
/// Element-wise maximum, outside autograd (a constant shift, as in vocab-parallel softmax).
at::Tensor maxNoGrad(ProcessGroups& groups, const std::vector<int>& members, const at::Tensor& x);
}  // namespace collective

}  // namespace autopar::runtime
