#pragma once
/// \file
/// `autopar search`'s pipeline: the multi-dimensional search (search/layer_level/hybrid.h) over
/// Megatron-style configurations of one transformer on one cluster. Every (TP, CP, EP, PP, DP, VPP,
/// schedule, micro-batch size, SP, recompute, ZeRO) candidate the cluster allows is screened in
/// closed form on block profiles (planner/configuration/block_profile.h); the fastest are evaluated
/// on the full model (planner/configuration/configuration_estimate.h), each also with its layers
/// placed exactly where it pipelines (search/layer_level/layer_placement.h), whichever is faster;
/// the winner is evaluated again.
///
///   SearchRequest request;
///   request.base.model = "llama2-70b"; request.base.nodes = 8; request.base.gbs = 128;
///   auto found = searchConfigurations(request);
///   // 64 A100s, global batch 128: found->best is TP 2 CP 2 PP 8 DP 2, ZB-H1, SP, ZeRO 1 (18.71 s)

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "frontend/transformer.h"
#include "planner/configuration/configuration_estimate.h"
#include "search/layer_level/hybrid.h"
#include "util/expected.h"

namespace autopar::planner {

struct SearchRequest {
  MegatronConfig base;  ///< model, cluster, nodes, gbs, seq, precision, inter-node bandwidth
  /// A measured block table (docs/profile-table.md): its block times and activations replace the
  /// analytic ones, and candidates are ranked on the closed form. Empty: analytic.
  std::string profilePath;
  int samplingNodes = 0;  ///< the cluster the table was measured on (0: the table's)
  int samplingDevicesPerNode = 0;
  /// Consider the zero-bubble H1 schedule, which runs only with Qi et al.'s patch to
  /// Megatron-LM / Megatron-Core (cost/framework.h); off, the search picks what the stock
  /// framework runs.
  bool zeroBubble = false;
  /// The pipeline schedules the search may pick (--schedules); empty: the ones the framework ships
  /// (1F1B, and interleaved where it runs it), with zero-bubble H1 when `zeroBubble`.
  std::vector<ir::Schedule> schedules;
  /// How many of the fastest screened configurations the full model evaluates again.
  int refinedCandidates = 16;
};

/// What refining a candidate found.
struct RefinedConfiguration {
  MegatronConfig config;  ///< as evaluated (placed exactly when that was faster)
  double seconds = 0;     ///< its step: the full model's, or the measured closed form's
  bool placed = false;
  /// The report's line for its exact placement: "  TP 8 PP 4 DP 2 MBS 1: layers [..] ..."; empty
  /// when placement does not apply.
  std::string placementLine;
  /// Its blocks sharded by the op-level search (faster than Megatron's on the full model).
  bool opSearchTaken = false;
};

struct ConfigurationSearch {
  search::HybridResult hybrid;  ///< ranked candidates (fastest first) and the search's counts
  /// Per ranked candidate, in the same order.
  std::vector<RefinedConfiguration> refined;
  int placedFaster = 0;  ///< refined candidates whose exact placement was faster
  /// The winner (when anything fits): its configuration, its full-model estimate, its step.
  std::optional<MegatronConfig> best;
  std::optional<ConfigEstimate> estimate;
  double bestSeconds = 0;
  bool placedBest = false;
  // What the search ran on.
  cluster::Cluster cluster;
  frontend::TransformerConfig transformer;
  int64_t sequence = 0;
  // The block profiler's counts.
  int probes = 0;
  int settings = 0;
  int measuredSettings = 0;
  bool measured = false;  ///< ranked on a measured table's closed form
  /// The op-level search (MegatronConfig::opSearch), the refined configurations whose blocks it
  /// sharded faster than Megatron's, and the block shardings it searched.
  OpSearch opSearch = OpSearch::kMegatron;
  int opSearchTaken = 0;
  int opSearchEvaluated = 0;
  int blockProbes = 0;

  [[nodiscard]] bool vision() const { return transformer.vision.layers > 0; }
};

/// Called with (done, total) as the full model refines candidates.
using SearchProgress = std::function<void(int, int)>;

/// Runs the search. Errors are bad input (model, cluster, precision, table), one line each.
/// When nothing fits, `best` is empty and nothingFitsAdvice() says what would.
/// What seed 003's --auto-parallel-mm samples on a node of `devicesPerNode` for `model`: the
/// tensor-parallel degrees the search tries that fit the node, and the search's micro-batch sizes
/// up to `globalBatch`.
struct SampledDegrees {
  std::vector<int64_t> tensorParallel;
  std::vector<int64_t> microBatches;
};
Expected<SampledDegrees> sampledDegrees(const std::string& model, int64_t devicesPerNode,
                                        int64_t globalBatch);

Expected<ConfigurationSearch> searchConfigurations(const SearchRequest& request,
                                                   const SearchProgress& progress = {});

/// For a search where nothing fits: the leanest configuration, its peak against the device's
/// memory, and about how many nodes would fit it (memory per device falls about in proportion
/// to the devices under ZeRO-3 and pipelining).
std::string nothingFitsAdvice(const ConfigurationSearch& found, int nodes);

}  // namespace autopar::planner
