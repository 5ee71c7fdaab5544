#pragma once
/// \file
/// What one stage can hold under the layer placement's model
/// (search/layer_level/layer_placement.h), with the least recompute that makes it fit: the options
/// the placement's dynamic program chooses from.
///   - 1F1B and zero-bubble H1: stage s runs positions [from, from + count) of the concatenated
///     stacks, and recomputes every count of the first stack's layers with the fewest of the
///     second's that then fits, keeping the cheapest.
///   - Interleaved (one stack): stage s runs `count` layers in its V chunks wherever they lie
///     (the layers are identical, so only the count matters), balanced: each chunk holds
///     floor(count / V) or ceil(count / V) layers. Its option is the least total recompute over
///     those splits and every recompute count per chunk that fits all its peak rows
///     (search/layer_level/schedule_model.h); among equals, the split whose slowest chunk is
///     fastest.
/// Example (interleaved, V = 2, peak rows {8, 3} and {7, 4}, 5 layers of 10 activation bytes
/// each, 1 when recomputed, 200 bytes of room for activations): the split {3, 2} needs
/// max(8 x 30 + 3 x 20, 7 x 30 + 4 x 20) = 300 bytes and {2, 3} needs max(160 + 90, 140 + 120) =
/// 260; recomputing one layer of chunk 0 of {2, 3} (held 8 or 7 times) gives max(88 + 90, 77 +
/// 120) = 197. The option: 5 layers as {2, 3}, one recomputed.
///
/// A contiguous stage's option depends on its run only, the layers of each stack it holds (n_0,
/// n_1), not on where the run starts, so the options are kept per stage and run:
/// P (L_0 + 1)(L_1 + 1) of them with two stacks, P (L + 1) with one (and interleaved), each
/// computed once (O(1) with one stack, O(L_0) with two). A run is kept only where some position
/// gives it with every other stage holding at least one layer per chunk.

#include <cstdint>
#include <utility>
#include <vector>

#include "search/layer_level/placement_model.h"

namespace autopar::search {

/// One stage holding some layers with its least recompute.
struct StageOption {
  bool fits = false;
  double seconds = 0;  ///< T_s
  double fill = 0;     ///< what it adds to the fill and drain when it is not the slowest
};

/// A stage's counts as the options choose them: entry k V + c (placement_model.h).
struct StageLoad {
  std::vector<int64_t> layers;
  std::vector<int64_t> recomputed;
  [[nodiscard]] LoadView view() const { return {layers.data(), recomputed.data()}; }
};

class StageOptions {
 public:
  explicit StageOptions(const PlacementModel& model);

  /// Stage `stage` holding positions [from, from + count) (interleaved: any `count` layers).
  [[nodiscard]] const StageOption& at(int64_t stage, int64_t from, int64_t count) const;
  /// The counts behind an option that fits.
  [[nodiscard]] StageLoad load(int64_t stage, int64_t from, int64_t count) const;
  /// Every distinct stage time that fits, ascending.
  [[nodiscard]] std::vector<double> bottlenecks() const;
  /// The most layers stage `stage` holds anywhere with its time at most `bottleneck` (0: none).
  [[nodiscard]] int64_t mostLayers(int64_t stage, double bottleneck) const;
  /// How many options the problem's table holds: P (L_0 + 1)(L_1 + 1).
  [[nodiscard]] static int64_t entries(const PlacementProblem& problem);
  /// The fewest layers a stage holds: one per chunk.
  [[nodiscard]] int64_t minLayers() const { return minLayers_; }

 private:
  /// Stage `stage` running n0 layers of the first stack and n1 of the second.
  [[nodiscard]] size_t index(int64_t stage, int64_t n0, int64_t n1) const;
  /// Whether stage `stage` can run (n0, n1) with every other stage holding a layer.
  [[nodiscard]] bool realizable(int64_t stage, int64_t n0, int64_t n1) const;
  void addContiguous();
  void addInterleaved();
  void addReach();

  const PlacementModel& model_;
  int64_t total_;
  int64_t minLayers_;
  bool positionFree_;
  int64_t firstStack_ = 0;   ///< L_0 (the whole model with one stack)
  int64_t secondStack_ = 0;  ///< L_1 (0 with one stack)
  std::vector<StageOption> options_;
  /// Per stage, its fitting options' times ascending, each with the most layers any option up to
  /// that time holds: mostLayers' answer by binary search.
  std::vector<std::vector<std::pair<double, int64_t>>> reach_;
};

}  // namespace autopar::search
