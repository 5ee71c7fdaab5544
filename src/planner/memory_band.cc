#include "planner/memory_band.h"

namespace autopar::planner {

std::string_view memoryVerdictName(MemoryVerdict verdict) {
  switch (verdict) {
    case MemoryVerdict::kFits:
      return "fits";
    case MemoryVerdict::kTight:
      return "tight";
    case MemoryVerdict::kOver:
      return "over";
  }
  return "over";
}

MemoryVerdict MemoryBand::against(int64_t usableBytes) const {
  if (lowBytes > usableBytes) return MemoryVerdict::kOver;
  return highBytes <= usableBytes ? MemoryVerdict::kFits : MemoryVerdict::kTight;
}

MemoryBand memoryBand(int64_t peakBytes, int64_t transientBytes,
                      const cost::CostConstants& constants) {
  const auto transient = static_cast<double>(transientBytes);
  return {peakBytes - static_cast<int64_t>(constants.memoryBandBelow * transient),
          peakBytes + static_cast<int64_t>(constants.memoryBandAbove * transient)};
}

int64_t transientStageBytes(const ir::CodePath& code, int64_t total, int64_t parameters,
                            int64_t gradients, int64_t optimizer) {
  return total - parameters - optimizer - (code.gradientSyncInPlace ? gradients : 0);
}

int64_t bandedBytes(const cost::MemoryBreakdown& memory, const ir::CodePath& code,
                    const cost::CostConstants& constants) {
  const int64_t transient =
      transientStageBytes(code, memory.total() - memory.runtimeBytes, memory.parameterBytes,
                          memory.gradientBytes, memory.optimizerBytes);
  return transient +
         static_cast<int64_t>(constants.allocatorReserve * static_cast<double>(transient));
}

MemoryBand stageBand(const cost::MemoryBreakdown& memory, const ir::CodePath& code,
                     const cost::CostConstants& constants) {
  return memoryBand(memory.total(), bandedBytes(memory, code, constants), constants);
}

bool fitsUnder(ir::MemoryPolicy policy, int64_t peakBytes, const MemoryBand& band,
               int64_t usableBytes) {
  if (policy == ir::MemoryPolicy::kSafe) return band.against(usableBytes) == MemoryVerdict::kFits;
  return peakBytes <= usableBytes;
}

}  // namespace autopar::planner
