#include "search/layer_level/hybrid.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "ir/setting.h"

namespace autopar::search {

namespace {

/// The memory savers: recompute and ZeRO stage.
constexpr ir::Recompute kRecompute[] = {ir::Recompute::kNone, ir::Recompute::kSelective,
                                        ir::Recompute::kFull};
constexpr int kZeroStages[] = {0, 1, 2, 3};

bool divides(int64_t divisor, int64_t value) { return divisor > 0 && value % divisor == 0; }

/// "heads (64), kvHeads (8), ffn (28672), vocab (32000)".
std::string extentsText(const HybridModel& model) {
  std::vector<std::string> parts;
  for (const auto& [name, extent] : model.tensorParallelExtents) {
    parts.push_back(fmt::format("{} ({})", name, extent));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::vector<int64_t> tensorParallelDegrees(const HybridModel& model, int64_t devicesPerNode) {
  std::vector<int64_t> degrees;
  for (int64_t tp = 1; tp <= devicesPerNode; tp *= 2) {
    if (divides(tp, devicesPerNode) &&
        std::all_of(model.tensorParallelExtents.begin(), model.tensorParallelExtents.end(),
                    [tp](const auto& extent) { return divides(tp, extent.second); })) {
      degrees.push_back(tp);
    }
  }
  return degrees;
}

namespace {

/// Context-parallel degrees for a sequence: powers of two with 2 CP dividing the sequence and its
/// text, at least `minTokens` tokens per rank.
std::vector<int64_t> contextDegrees(const HybridModel& model, const HybridSpace& space) {
  const int64_t text = model.textTokens > 0 ? model.textTokens : model.seq;
  std::vector<int64_t> degrees{1};
  for (int64_t cp = 2; model.seq / cp >= space.minTokensPerContextRank; cp *= 2) {
    if (divides(2 * cp, model.seq) && divides(2 * cp, text)) degrees.push_back(cp);
  }
  return degrees;
}

/// Expert-parallel degrees for a DP degree: those dividing the experts and DP (1 when dense).
std::vector<int64_t> expertDegrees(const HybridModel& model, int64_t dp) {
  std::vector<int64_t> degrees{1};
  for (int64_t ep = 2; ep <= std::min(model.experts, dp); ++ep) {
    if (divides(ep, model.experts) && divides(ep, dp)) degrees.push_back(ep);
  }
  return degrees;
}

/// Sequence parallel off and on, as the shape allows: on needs TP > 1 with CP x TP dividing the
/// sequence (and the experts' slots); expert parallelism with TP > 1 needs it on.
std::vector<bool> sequenceParallelChoices(const HybridModel& model, const HybridCandidate& shape) {
  const bool slotsSplitByCp = model.experts == 0 || divides(shape.cp, model.expertSlots);
  const bool slotsSplitBySp = model.experts == 0 || divides(shape.cp * shape.tp, model.expertSlots);
  std::vector<bool> choices;
  if (slotsSplitByCp && (shape.ep == 1 || shape.tp == 1)) choices.push_back(false);
  if (shape.tp > 1 && divides(shape.tp * shape.cp, model.seq) && slotsSplitBySp) {
    choices.push_back(true);
  }
  return choices;
}

/// Appends `shape` with every expert-parallel degree, schedule (1F1B and, with PP > 1 and VPP
/// 1, zero-bubble H1) and sequence-parallel choice that the space admits.
void appendVariants(const HybridModel& model, const HybridSpace& space, HybridCandidate shape,
                    std::vector<HybridCandidate>& shapes) {
  for (int64_t ep : expertDegrees(model, shape.dp)) {
    shape.ep = ep;
    for (bool zeroBubble : {false, true}) {
      if (zeroBubble && (shape.pp == 1 || shape.vpp > 1)) continue;
      shape.schedule = zeroBubble      ? ir::Schedule::kZeroBubbleH1
                       : shape.vpp > 1 ? ir::Schedule::kInterleaved
                                       : ir::Schedule::k1F1B;
      for (bool sequenceParallel : sequenceParallelChoices(model, shape)) {
        shape.sequenceParallel = sequenceParallel;
        if (!space.admits || space.admits(shape)) shapes.push_back(shape);
      }
    }
  }
}

}  // namespace

ShapeKey shapeKey(const HybridCandidate& c) { return {c.tp, c.cp, c.pp, c.dp, c.ep}; }

std::vector<HybridCandidate> hybridShapes(const HybridModel& model, const HybridSpace& space) {
  std::vector<HybridCandidate> shapes;
  const std::vector<int64_t> contexts = contextDegrees(model, space);
  for (int64_t tp : tensorParallelDegrees(model, space.devicesPerNode)) {
    if (!divides(tp, space.world)) continue;
    for (int64_t cp : contexts) {
      for (int64_t pp = 1; pp * tp * cp <= space.world; ++pp) {
        if (!divides(pp * tp * cp, space.world) || pp > model.layers) continue;
        const int64_t dp = space.world / (pp * tp * cp);
        const int64_t mostVirtual = pp > 1 && model.interleavable ? space.maxVirtualStages : 1;
        for (int64_t vpp = 1; vpp <= mostVirtual; ++vpp) {
          // Interleaving needs the layers to split evenly into PP x VPP chunks (Megatron-LM).
          if (pp * vpp > model.layers || (vpp > 1 && !divides(pp * vpp, model.layers))) continue;
          for (int64_t mbs : space.microBatchSizes) {
            if (!divides(dp * mbs, space.globalBatch)) continue;
            const int64_t microBatches = space.globalBatch / (dp * mbs);
            if (microBatches < pp || (vpp > 1 && !divides(pp, microBatches))) continue;
            HybridCandidate shape;
            shape.tp = tp;
            shape.cp = cp;
            shape.pp = pp;
            shape.dp = dp;
            shape.vpp = vpp;
            shape.mbs = mbs;
            appendVariants(model, space, shape, shapes);
          }
        }
      }
    }
  }
  return shapes;
}

std::vector<HybridCandidate> hybridCandidates(const HybridModel& model, const HybridSpace& space) {
  std::vector<HybridCandidate> candidates;
  for (const HybridCandidate& shape : hybridShapes(model, space)) {
    for (ir::Recompute recompute : kRecompute) {
      for (int zero : kZeroStages) {
        // ZeRO shards over data parallelism: with DP 1 it repeats ZeRO 0. ZeRO 2 and 3 do not
        // combine with pipelining in Megatron-LM or DeepSpeed.
        if ((zero > 0 && shape.dp == 1) || (zero >= 2 && shape.pp > 1)) continue;
        HybridCandidate candidate = shape;
        candidate.recompute = recompute;
        candidate.zero = zero;
        if (!space.admits || space.admits(candidate)) candidates.push_back(candidate);
      }
    }
  }
  return candidates;
}

namespace {

using Scored = std::pair<HybridCandidate, HybridScore>;

/// Fastest first; ties go to fewer devices per replica, then to the earlier entry.
void rank(std::vector<Scored>& scored) {
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
    if (a.second.stepSeconds != b.second.stepSeconds) {
      return a.second.stepSeconds < b.second.stepSeconds;
    }
    return a.first.tp * a.first.cp * a.first.pp < b.first.tp * b.first.cp * b.first.pp;
  });
}

/// Keeps, per shape, the fastest candidate that fits, or the leanest while none of it fits.
void keepShapeLeader(std::map<ShapeKey, Scored>& leaders, const Scored& scored) {
  auto [at, inserted] = leaders.try_emplace(shapeKey(scored.first), scored);
  if (inserted) return;
  const HybridScore& kept = at->second.second;
  const HybridScore& score = scored.second;
  const bool better = score.fits ? !kept.fits || score.stepSeconds < kept.stepSeconds
                                 : !kept.fits && score.peakBytes < kept.peakBytes;
  if (better) at->second = scored;
}

/// The leaders that fit, fastest first, then those that do not, leanest first.
std::vector<Scored> orderLeaders(const std::map<ShapeKey, Scored>& leaders) {
  std::vector<Scored> fitting;
  std::vector<Scored> over;
  for (const auto& [key, scored] : leaders) (scored.second.fits ? fitting : over).push_back(scored);
  rank(fitting);
  std::stable_sort(over.begin(), over.end(), [](const Scored& a, const Scored& b) {
    return a.second.peakBytes < b.second.peakBytes;
  });
  fitting.insert(fitting.end(), over.begin(), over.end());
  return fitting;
}

}  // namespace

Expected<HybridResult> searchHybrid(const HybridModel& model, const HybridSpace& space,
                                    const HybridEvaluator& screen, const HybridEvaluator& full,
                                    int refine, const HybridProgress& progress) {
  HybridResult result;
  result.shapes = static_cast<int>(hybridShapes(model, space).size());
  const std::vector<HybridCandidate> candidates = hybridCandidates(model, space);
  if (candidates.empty()) {
    // The smallest change that gives shapes: the next global batch that divides (the cluster
    // and model stay as asked). Each shape the batch does not constrain (at 8 x the devices
    // every DP divides it with PP micro-batches to spare) takes its next multiple of DP with PP
    // micro-batches; the least of them, checked, is the answer: one pass over the shapes rather
    // than a try per batch (millions at a million devices).
    std::string change = "no global batch up to 8 times the devices does";
    HybridSpace unconstrained = space;
    unconstrained.globalBatch = 8 * space.world;
    std::optional<int64_t> least;
    for (const HybridCandidate& shape : hybridShapes(model, unconstrained)) {
      const int64_t dp = shape.dp;
      const int64_t batch = std::max(shape.pp * dp, (space.globalBatch / dp + 1) * dp);
      if (!least || batch < *least) least = batch;
    }
    for (int64_t batch = least.value_or(0); least && batch <= 8 * space.world + space.globalBatch;
         batch += 1) {
      HybridSpace larger = space;
      larger.globalBatch = batch;
      if (!hybridShapes(model, larger).empty()) {
        change = ir::flag(ir::Setting::kGbs, batch) + " would";
        break;
      }
      if (batch - *least > 64) break;  // the shapes' own rules disagree: say no batch found
    }
    return Error{fmt::format(
        "no parallel shape fits {} devices ({} per node) with global batch {}: TP must divide the "
        "node and {}, and the global batch must divide into DP x micro-batch size with at least PP "
        "micro-batches; {}",
        space.world, space.devicesPerNode, space.globalBatch, extentsText(model), change)};
  }
  std::vector<Scored> fitting;
  std::map<ShapeKey, Scored> leaders;
  std::optional<Error> firstError;
  bool scored = false;
  for (const HybridCandidate& candidate : candidates) {
    auto score = screen(candidate);
    if (!score) {
      if (!firstError) firstError = score.error();
      continue;
    }
    ++result.screened;
    if (!scored || score->peakBytes < result.leanest.second.peakBytes) {
      result.leanest = {candidate, *score};
      scored = true;
    }
    if (score->fits) fitting.emplace_back(candidate, *score);
    keepShapeLeader(leaders, {candidate, *score});
  }
  if (!scored && firstError) return firstError->in("every candidate failed; the first");
  result.screenFits = static_cast<int>(fitting.size());
  rank(fitting);
  result.shapeLeaders = orderLeaders(leaders);
  if (!fitting.empty()) result.screenBestSeconds = fitting.front().second.stepSeconds;
  // The screen can be optimistic about memory: go on down the list until `refine` candidates fit
  // on the full evaluator, within three times as many evaluations.
  const int budget = std::min(3 * refine, static_cast<int>(fitting.size()));
  for (int i = 0; i < budget && static_cast<int>(result.ranked.size()) < refine; ++i) {
    const HybridCandidate& candidate = fitting[static_cast<size_t>(i)].first;
    auto score = full(candidate);
    ++result.refined;
    if (progress) progress(result.refined, budget);
    if (score && score->fits) result.ranked.emplace_back(candidate, *score);
    if (score && !score->fits) result.overOnFull.emplace_back(candidate, *score);
  }
  rank(result.ranked);
  return result;
}

}  // namespace autopar::search
