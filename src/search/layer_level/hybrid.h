#pragma once
/// \file
/// The multi-dimensional (hybrid) search of seed 003: which tensor, pipeline and data parallel
/// degrees, virtual stages, micro-batch size, recompute and ZeRO stage train a layered model
/// fastest within device memory. The search is generic: it knows the model only through a few
/// dimensions that constrain the degrees, and it asks an injected evaluator (the CLI's
/// `autopar estimate`, i.e. the plan's cost model and pipeline simulator) for each candidate's
/// step time and peak memory.
///
/// Every shape (TP, PP, DP, VPP, micro-batch size, sequence parallel on and off, and with PP > 1
/// and VPP 1 both 1F1B and zero-bubble H1) is tried with
/// every memory saver (recompute none, selective or full; ZeRO 0 to 3) on a cheap screening
/// evaluator (the closed form of search/layer_level/analytic_step.h), and the fastest that fit are
/// evaluated again on the full evaluator (the plan's cost model and pipeline simulator), which
/// ranks them. ZeRO stages are skipped with DP 1 (they repeat ZeRO 0), and ZeRO 2 and 3 with PP > 1
/// (neither Megatron-LM nor DeepSpeed combines them with pipelining). Shapes: TP a power of two
/// dividing the devices of a node, the heads, the key/value heads, the MLP width and the
/// vocabulary; CP (context parallel) a power of two, 2 CP dividing the sequence and its text, with
/// at least minTokensPerContextRank tokens per rank; TP x CP x PP divides the world, with at least
/// PP x VPP layers, and the layers divide into PP x VPP chunks when interleaved; the micro-batch
/// count (global batch / (DP x micro-batch size)) is whole, at least PP, and a multiple of PP when
/// interleaved; sequence parallel needs TP > 1 with CP x TP dividing the sequence. With experts, EP
/// (expert parallelism, carved out of DP as Megatron-Core does) is every degree dividing both the
/// experts and DP, with the experts' slots per sample dividing by CP (x TP with sequence
/// parallelism); EP > 1 with TP > 1 only with sequence parallelism (Megatron-Core requires it).

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ir/parallel_config.h"
#include "util/expected.h"

namespace autopar::search {

/// A candidate is one parallel configuration (ir/parallel_config.h).
using HybridCandidate = ir::ParallelConfig;

/// What constrains the degrees, as numbers: the search knows no model (the frontend says what
/// tensor parallelism cuts, frontend::tensorParallelExtents).
struct HybridModel {
  int64_t layers = 0;  ///< of every stack (a vision tower's and the LLM's)
  /// The extents tensor parallelism cuts, by name ("heads" 64, "kvHeads" 8, ...): TP divides each.
  std::vector<std::pair<std::string, int64_t>> tensorParallelExtents;
  int64_t seq = 0;
  int64_t textTokens = 0;  ///< of the sequence (all of it without a vision tower)
  /// false with a vision tower: its layers are placed by time, not interleaved.
  bool interleavable = true;
  /// Experts in every layer (0: dense) and the slots of each per sample (seq x topK / experts),
  /// which are cut like the sequence.
  int64_t experts = 0;
  int64_t expertSlots = 0;
};

struct HybridSpace {
  int64_t world = 0;
  int64_t devicesPerNode = 0;
  int64_t globalBatch = 0;
  std::vector<int64_t> microBatchSizes{1, 2, 4, 8};
  int64_t maxVirtualStages = 2;
  /// Context parallelism keeps at least this many tokens of the sequence per rank (it pays off
  /// for long sequences only; Megatron-LM splits each rank's part in two for load balance).
  int64_t minTokensPerContextRank = 2048;
  /// Whether the framework that will run the plan can run a candidate (its schedules, CP, EP,
  /// ZeRO stages); unset: every candidate.
  std::function<bool(const HybridCandidate&)> admits;
};

/// The degrees that make a parallel shape (TP, CP, PP, DP, EP), whatever its micro-batching and
/// memory savers: HybridResult::shapeLeaders holds one candidate per key.
using ShapeKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;
ShapeKey shapeKey(const HybridCandidate& candidate);

struct HybridScore {
  double stepSeconds = 0;
  int64_t peakBytes = 0;  ///< the fullest stage
  bool fits = false;
  /// Its memory band straddles the usable memory: it may run out of memory (the planner's
  /// MemoryVerdict::kTight; under --memory-policy safe it does not fit).
  bool tight = false;
};

using HybridEvaluator = std::function<Expected<HybridScore>(const HybridCandidate&)>;
/// Called after each full evaluation with the number done and the total.
using HybridProgress = std::function<void(int done, int total)>;

struct HybridResult {
  /// The refined candidates that fit on the full evaluator, fastest first (ties: fewer devices
  /// per replica, then the screening order, so the ranking is deterministic).
  std::vector<std::pair<HybridCandidate, HybridScore>> ranked;
  int shapes = 0;      ///< shapes enumerated
  int screened = 0;    ///< candidates the screening evaluator scored
  int screenFits = 0;  ///< of those, how many fit
  int refined = 0;     ///< full evaluations
  /// With nothing fitting: the screened candidate with the least peak memory.
  std::pair<HybridCandidate, HybridScore> leanest;
  /// Why the other shapes lost: for each parallel shape (TP, CP, PP, DP, EP) its best screened
  /// candidate, the fastest that fits or else the leanest; those that fit first (fastest first),
  /// then the rest (least memory first). Screen scores.
  std::vector<std::pair<HybridCandidate, HybridScore>> shapeLeaders;
  /// The fastest screened step that fits (0: none), the yardstick of shapeLeaders' steps.
  double screenBestSeconds = 0;
  /// Candidates the screen fitted and the full evaluator found over memory, with its score.
  std::vector<std::pair<HybridCandidate, HybridScore>> overOnFull;
};

/// The tensor-parallel degrees the search tries on nodes of `devicesPerNode`: powers of two
/// dividing the node and every extent tensor parallelism cuts, smallest first.
std::vector<int64_t> tensorParallelDegrees(const HybridModel& model, int64_t devicesPerNode);

/// The shapes (recompute none, ZeRO 0) the space allows, in a fixed order.
std::vector<HybridCandidate> hybridShapes(const HybridModel& model, const HybridSpace& space);

/// Every shape with every memory saver the rules allow, in a fixed order.
std::vector<HybridCandidate> hybridCandidates(const HybridModel& model, const HybridSpace& space);

/// Screens every candidate, then evaluates the fastest that fit on `full` until `refine` of them
/// fit there too (at most 3 x `refine` evaluations). Evaluator errors for a
/// candidate (a shape the model builder rejects) skip it; the search fails only on an empty
/// space or when every candidate fails.
Expected<HybridResult> searchHybrid(const HybridModel& model, const HybridSpace& space,
                                    const HybridEvaluator& screen, const HybridEvaluator& full,
                                    int refine, const HybridProgress& progress = {});

}  // namespace autopar::search
