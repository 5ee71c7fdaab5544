#pragma once
/// \file
/// How sure a memory verdict is. A stage's estimated peak carries a band: the estimate less and
/// plus the error measured for its transient part, what the step allocates and frees
/// (activations, workspaces, collective buffers, gradients outside a contiguous buffer, and the
/// caching allocator's reserve over them); parameters and optimizer states are counted exactly.
/// The shares are cost::CostConstants::memoryBandBelow and memoryBandAbove, measured by
/// bench/published.py --memory-band. Against the usable memory a band fits, is tight (it
/// straddles it) or is over; ir::MemoryPolicy says whether the estimate or the band's top decides.
///   peak 72.96 GiB, transient 70.0 GiB, band -3.74% / +13.51%: 70.34 - 82.42 GiB, tight on 80 GiB

#include <cstdint>
#include <string_view>

#include "cost/constants.h"
#include "cost/memory.h"
#include "ir/training_setup.h"

namespace autopar::planner {

/// Where a stage's memory band lies against the usable memory: wholly under it, straddling it,
/// or wholly over it.
enum class MemoryVerdict { kFits, kTight, kOver };
std::string_view memoryVerdictName(MemoryVerdict verdict);  ///< "fits", "tight", "over"

/// The range a stage's measured peak falls in: the estimate less and plus the measured error of
/// its transient part (cost::CostConstants::memoryBandBelow, memoryBandAbove).
struct MemoryBand {
  int64_t lowBytes = 0;
  int64_t highBytes = 0;
  /// Against `usableBytes`: over when even the low end exceeds it, fits when the high end does
  /// not, tight between.
  [[nodiscard]] MemoryVerdict against(int64_t usableBytes) const;
};

/// The band of a stage whose estimate is `peakBytes`, of which `transientBytes` the step
/// allocates and frees (transientStageBytes, the allocator's reserve over it included).
MemoryBand memoryBand(int64_t peakBytes, int64_t transientBytes,
                      const cost::CostConstants& constants);

/// The part of a stage's memory breakdown (its runtime reserve included, if any) the band's
/// error applies to: its transient part (transientStageBytes) with the allocator's reserve over
/// it.
int64_t bandedBytes(const cost::MemoryBreakdown& memory, const ir::CodePath& code,
                    const cost::CostConstants& constants);

/// The band of a stage's memory breakdown: memoryBand over its bandedBytes.
MemoryBand stageBand(const cost::MemoryBreakdown& memory, const ir::CodePath& code,
                     const cost::CostConstants& constants);

/// Whether a stage of this peak and band fits `usableBytes` under `policy`: its peak
/// (kExpected) or its band's top (kSafe) is usable.
bool fitsUnder(ir::MemoryPolicy policy, int64_t peakBytes, const MemoryBand& band,
               int64_t usableBytes);

/// Of a stage's tensors (`total` bytes, with these parameters, gradients and optimizer states),
/// those the step allocates and frees: all but the state allocated once at start-up, the
/// parameters and optimizer states and, kept in one contiguous buffer
/// (ir::CodePath::gradientSyncInPlace), the gradients. PyTorch's caching allocator fragments the
/// former; the latter are exact-sized blocks that stay.
int64_t transientStageBytes(const ir::CodePath& code, int64_t total, int64_t parameters,
                            int64_t gradients, int64_t optimizer);

}  // namespace autopar::planner
