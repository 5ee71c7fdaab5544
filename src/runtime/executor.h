#pragma once
/// \file
/// The SPMD executor: runs a sharded graph on this rank for some training steps, with LibTorch
/// kernels and autograd, and Gloo collectives between the ranks (docs/runtime.md). This header
/// does not include LibTorch, so callers compile without it.
///
/// Lowering, per op in graph order:
///   1. each input is brought from its producer's layout to the layout the op needs, by the
///      redistribution steps layout/ plans (split, all-gather, all-to-all, reduce-scatter,
///      all-reduce, make-partial), each an autograd function whose backward is its transpose;
///   2. an input replicated over axes the op's other tensors are cut on is marked as such: its
///      backward all-reduces the gradients of the copies over those axes (Megatron's f operator;
///      for a parameter replicated over the batch axis this is data parallelism's gradient
///      all-reduce);
///   3. the local kernel runs on the blocks (runtime/kernels.h).
/// Parameters and inputs are drawn whole from seeded generators and cut to the block each rank
/// holds, so every plan (and the unsharded run) starts from the same values. The loss's backward
/// starts from 1 / micro-batches on every rank of the last stage; Adam then updates each rank's
/// blocks. Pipeline stages exchange activations and their gradients point to point
/// (runtime/stage_transfers.h) under the 1F1B schedule. With optimizer parallelism
/// a parameter's Adam states and update are cut over its replicas and the updated blocks are
/// all-gathered. Data-parallel replicas may train uneven shares of each micro-batch.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "ir/graph.h"
#include "plan/plan.h"
#include "rules/graph_sharding.h"
#include "util/expected.h"

namespace autopar::runtime {

struct RunConfig {
  int steps = 3;
  uint64_t seed = 1;
  double learningRate = 1e-3;
  double adamEpsilon = 1e-8;
  bool sgd = false;  ///< plain SGD instead of Adam (its update is linear in the gradient)
  /// Time the forward and backward passes and count the heap bytes ops keep (glibc's mallinfo2),
  /// for `autopar profile`.
  bool measure = false;
  /// Test hook for fault handling: this rank kills itself (SIGKILL) in the middle of this step
  /// (after the forward pass); -1 for none.
  int dieAtStep = -1;
  /// Test hook showing the check can fail: lowers the plan without the gradient all-reduces of
  /// replicated inputs (step 2 of the lowering above).
  bool dropGradientSums = false;
};

/// How this process joins the run. world 1 runs alone, without a store.
struct Connection {
  int rank = 0;
  int world = 1;
  std::string address = "127.0.0.1";  ///< the store's host; Gloo binds to it too
  int port = 0;
  bool hostsStore = false;  ///< rank 0 of a job launched from outside autopar
  /// The launcher's file store (runtime/launcher.h); empty: the TCP store at address:port.
  std::string storeFile;
  /// How long the store and every collective wait for a peer (`--timeout`).
  std::chrono::milliseconds timeout{60000};
};

/// Where an op sits for block profiles: before the first stack layer (the embedding), in a
/// layer, or after the last layer (the head and the loss).
enum class Part { kFirst, kLayers, kLast };
inline constexpr int kParts = 3;

/// What one part of the model cost in a micro-batch's forward pass on this rank.
struct PartCost {
  double forwardSeconds = 0;
  int64_t keptBytes = 0;  ///< heap bytes its ops left allocated (outputs and saved tensors)
};

struct StepReport {
  int step = 0;
  double loss = 0;  ///< the whole model's loss, the same on every rank
  double seconds = 0;
  /// With RunConfig::measure, micro-batch 0 on this rank: its forward and backward seconds, the
  /// heap bytes its forward kept for the backward, and the forward per part.
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  int64_t activationBytes = 0;
  std::array<PartCost, kParts> parts{};
  /// The rows of this rank's block of the batch (dim 0 of a graph input on its stage): its
  /// replica's share of a micro-batch, or less where other axes cut the batch too; 0 on a stage
  /// without graph inputs.
  int64_t samples = 0;
};

/// A block of a parameter after the last step, at its global offsets.
struct ParameterBlock {
  std::string name;
  std::vector<int64_t> fullShape;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::vector<float> values;
};

struct RankResult {
  std::vector<StepReport> steps;
  std::vector<ParameterBlock> parameters;
};

struct Program {
  const ir::Graph& graph;
  const rules::GraphSharding& sharding;           ///< over ranks 0 .. world-1
  const cluster::Cluster& cluster;                ///< plans the redistributions' steps
  std::vector<plan::ParameterRecord> parameters;  ///< optimizer shards per parameter, if any
  /// Pipeline: each op's stage (empty: one stage) and the micro-batches of a step. Stage s runs
  /// on ranks s * world / stages and up, its ops' meshes on those ranks; the schedule is 1F1B.
  std::vector<int> opStage;
  int stages = 1;
  int microBatches = 1;
  /// Interleaved schedule: each op's model chunk on its stage (empty: one chunk). A stage runs
  /// all its chunks of a micro-batch in one forward, and the step runs every forward before the
  /// backwards (GPipe's order: the numbers are the interleaved schedule's, the order is not).
  std::vector<int> opChunk;
  /// Per data-parallel replica, its samples of each micro-batch (empty or all equal: an even
  /// split). A stage's ranks form the replicas in order; a replica's blocks of the batch are cut
  /// in proportion to its share (runtime/batch_shares.h).
  std::vector<int64_t> batchShares;
};

/// Runs the program's training steps on this rank; `onStep` sees each step's report.
Expected<RankResult> execute(const Program& program, const Connection& connection,
                             const RunConfig& config,
                             const std::function<void(const StepReport&)>& onStep);

}  // namespace autopar::runtime
