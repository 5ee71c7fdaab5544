#include "cost/comm_overlap.h"

#include <algorithm>

namespace autopar::cost {

namespace {

/// One pass's activation communication: all of it, the mixture-of-experts token exchange, the
/// context-parallel ring and the all-reduces within it, and the compute they may run under.
struct PassComm {
  double comm = 0;
  double exchange = 0;
  double ring = 0;
  double allReduce = 0;
  double compute = 0;
  double attention = 0;  ///< the attention's part of compute
};

/// Which of a pass's activation communication runs under its compute.
struct PassOverlap {
  bool collectives = false;  ///< all but the exchange and the ring: all-gathers, reduce-scatters
  bool allReduces = false;   ///< and all-reduces (only with `collectives`)
  bool exchange = false;
  bool ring = false;
  bool copiesHideRing = false;  ///< the ring goes with the collectives (interleaved copies)
};

/// What of a pass's activation communication its compute leaves exposed: the overlapped part
/// beyond the compute, plus the part nothing overlaps. An overlapped ring runs under the
/// attention alone; the rest is overlapped by the TP overlap, which leaves the ring to the
/// attention unless interleaved copies hide one another's, and the all-reduces to the code
/// paths that overlap them, or by the expert one.
double exposedComm(const PassComm& pass, const PassOverlap& overlap) {
  const double ringApart = overlap.copiesHideRing ? 0 : pass.ring;
  const double allReduceApart = overlap.allReduces ? 0 : pass.allReduce;
  const double hideable =
      (overlap.collectives ? pass.comm - pass.exchange - ringApart - allReduceApart : 0) +
      (overlap.exchange ? pass.exchange : 0);
  const double ringHidden = overlap.ring ? std::min(ringApart, pass.attention) : 0;
  return pass.comm - hideable - ringHidden + std::max(0.0, hideable - (pass.compute - ringHidden));
}

}  // namespace

/// Communication overlap: a pass's activation communication (before the parameter collectives
/// are added) runs under that pass's compute, as far as the code path overlaps it; what outlasts
/// the compute stays exposed. Transformer Engine's TP overlap hides all-gathers and
/// reduce-scatters; an all-reduce only interleaved copies hide, or in the backward Megatron's
/// asynchronous all-reduce of the input gradient under the weight-gradient GEMM.
void hideActivationComm(StageCost& stage, const EvaluateOptions& options) {
  const CodePath& code = options.codePath;
  const bool copies = options.copies > 1;
  const PassOverlap forward{options.hidesActivationComm(), copies, code.overlapExpertComm,
                            code.overlapRingExchange, copies};
  stage.forwardCommSeconds = exposedComm(
      {stage.forwardCommSeconds, stage.forwardExchangeSeconds, stage.forwardRingSeconds,
       stage.forwardAllReduceSeconds, stage.forwardComputeSeconds, stage.forwardAttentionSeconds},
      forward);
  if (!options.hidesActivationComm()) {
    stage.backwardCommSeconds =
        exposedComm({stage.backwardCommSeconds, stage.backwardExchangeSeconds,
                     stage.backwardRingSeconds, stage.backwardAllReduceSeconds,
                     stage.backwardComputeSeconds, stage.backwardAttentionSeconds},
                    {code.asyncTpAllreduce, code.asyncTpAllreduce, code.overlapExpertComm,
                     code.overlapRingExchange, false});
    return;
  }
  // The activations' replayed redistributions (a recomputed region's, and the gathers of
  // stashed slices) run in the backward pass like its own communication, so the same code path
  // hides them: TE's overlapped layers overlap their communication in a recomputed forward too,
  // and MindSpore's interleaved copies run one copy's replay under another copy's backward. The
  // parameters' gathers are not activation communication and stay as they were.
  const double replayComm =
      stage.recomputeSeconds - stage.recomputeComputeSeconds - stage.parameterReplaySeconds;
  stage.backwardCommSeconds =
      exposedComm({stage.backwardCommSeconds + replayComm, stage.backwardExchangeSeconds,
                   stage.backwardRingSeconds, stage.backwardAllReduceSeconds,
                   stage.backwardComputeSeconds + stage.recomputeComputeSeconds,
                   stage.backwardAttentionSeconds},
                  {true, copies || code.asyncTpAllreduce, code.overlapExpertComm,
                   code.overlapRingExchange, copies});
  stage.recomputeSeconds = stage.recomputeComputeSeconds + stage.parameterReplaySeconds;
}

}  // namespace autopar::cost
