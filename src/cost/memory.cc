#include "cost/memory.h"

#include <fmt/format.h>

namespace autopar::cost {

Expected<OptimizerState> parseOptimizerState(std::string_view name) {
  if (name == "fp32") return OptimizerState::kFp32;
  if (name == "remainders") return OptimizerState::kRemainders;
  if (name == "bf16") return OptimizerState::kBf16;
  if (name == "fp32-moments") return OptimizerState::kFp32Moments;
  return Error{fmt::format("'{}': expected fp32, remainders, bf16 or fp32-moments", name)};
}

OptimizerSpec optimizerSpecOf(const ir::TrainingSetup& setup) {
  return {.fp32Gradients = setup.fp32Gradients(),
          .state = setup.optimizerState,
          .keepsLowPrecisionGradients = setup.bf16OptimizerRuns()};
}

OptimizerStateBytes optimizerStateBytes(ir::DType dtype, OptimizerState state) {
  // An fp32 weight is its own master copy.
  if (dtype == ir::DType::kF32) return {0, 4};
  switch (state) {
    case OptimizerState::kRemainders:
      // Only a bf16 weight is the top half of its fp32 value; an fp16 one needs the full copy.
      return {dtype == ir::DType::kBF16 ? 2 : 4, 4};
    case OptimizerState::kBf16:
      return {0, 2};
    case OptimizerState::kFp32Moments:
      return {0, 4};
    case OptimizerState::kFp32:
      break;
  }
  return {4, 4};
}

ParameterStateBytes parameterStateBytes(int64_t elements, ir::DType dtype,
                                        const OptimizerSpec& optimizer) {
  const int64_t weightBytes = ir::dtypeBytes(dtype);
  const int64_t gradientBytes = optimizer.heldGradientBytes(weightBytes);
  const OptimizerStateBytes state = optimizerStateBytes(dtype, optimizer.state);
  const int64_t momentBytes =
      state.moment * static_cast<int64_t>(optimizer.fp32MomentsPerParameter);
  return ParameterStateBytes{elements * weightBytes, elements * gradientBytes,
                             elements * (state.master + momentBytes)};
}

}  // namespace autopar::cost
