#include "cost/memory.h"

namespace autopar::cost {

ParameterStateBytes parameterStateBytes(int64_t elements, ir::DType dtype,
                                        const OptimizerSpec& optimizer) {
  const int64_t weightBytes = ir::dtypeBytes(dtype);
  const int64_t gradientBytes = optimizer.fp32Gradients ? 4 : weightBytes;
  // An fp32 master copy is kept only when the weight itself is lower precision.
  const int64_t masterBytes = dtype == ir::DType::kF32 ? 0 : 4;
  const int64_t momentBytes = 4 * static_cast<int64_t>(optimizer.fp32MomentsPerParameter);
  return ParameterStateBytes{elements * weightBytes, elements * gradientBytes,
                             elements * (masterBytes + momentBytes)};
}

}  // namespace autopar::cost
