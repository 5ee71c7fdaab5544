#pragma once
/// \file
/// The Lagrangian search for the intra-operator problem (internal to solveLocalSearch).
///
/// The model, as XLA's auto-sharding and Alpa write it:
///   variables    x_v in S_v: one strategy per node v
///   objective    min C(x) = sum_v c_v(x_v) + sum_(u,v) c_uv(x_u, x_v)
///   constraints  (a) for every segment t of the compressed timeline (the moments between two
///                    consecutive interval ends), the usage of the nodes live in t:
///                    sum_(v live in t) m_v(x_v) <= M
///
/// Relaxing (a) with multipliers lambda_t >= 0 gives the dual function
///   L(lambda) = min_x [ C(x) + sum_v Lambda_v m_v(x_v) ] - M sum_t lambda_t,
///   Lambda_v = sum of lambda_t over the segments of v's live interval,
/// which is at most the optimum for every lambda >= 0. The inner minimum is a pairwise problem
/// without memory; message passing (message_passing.h) bounds it from below, so the bound holds.
///
/// The search:
///   1. The hard search's feasible start gives the first upper bound U.
///   2. Dual ascent. Each round runs kSweeps sweeps of message passing under the prices Lambda,
///      then takes a projected subgradient step
///        lambda_t <- max(0, lambda_t + theta (U - L) / |g|^2 g_t)   (Polyak's step),
///      where g_t is the rounded labelling's usage at t minus M. Theta halves after kPatience
///      rounds without a better bound.
///   3. Every kDriveEvery rounds, a primal drive. From a copy of the multipliers, each segment
///      over the limit gets dearer (x driveGrowth, plus a tenth of the mean multiplier), and
///      message passing runs again until the rounded labelling fits. That labelling is repaired if
///      need be, descended, and polished by kPolishMoves moves of the hard search; the cheapest is
///      the result. The multipliers and messages are then restored.
/// On memory-bound problems the dual's labellings sit at the edge of memory, so a drive needs
/// few rounds and lands near the bound (docs/intra-op-solvers.md has the figures).
///
/// Example (the contest's example.json, limit 50): with nothing priced the cheapest labelling,
/// (0, 0, 1, 1, 0) at cost 415, needs 55 on [50, 70), where nodes 0, 1 and 2 are live. Pricing
/// that segment at p per unit, node 2's leaner strategy (usage 15 instead of 20, 30 dearer)
/// wins once 5p >= 30. L(p) = min(415 + 55p, 445 + 50p) - 50p peaks at p = 6 with L = 445, the
/// optimum: (0, 0, 2, 1, 0), and the bound is tight.

#include <cstdint>

#include "search/intra_op/local_search_budget.h"
#include "search/intra_op/local_search_moves.h"

namespace autopar::search::local {

/// Runs until the budget is spent; each round counts one step against an iteration budget.
/// `driveGrowth` is the drives' factor per round on the multipliers of over-full segments. The
/// outcome is empty when nothing fits; its lowerBound is the best dual value reached.
Outcome lagrangianSearch(const Indexed& index, uint64_t seed, Budget& budget, double driveGrowth);

}  // namespace autopar::search::local
