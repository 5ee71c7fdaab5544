#pragma once
/// \file
/// Per-device memory: model states by dtype and activations kept for backward.
///
/// Mixed-precision Adam keeps, per parameter: the low-precision weight (2 bytes for bf16), its
/// gradient (2 bytes, or 4 when gradients accumulate in fp32 as Megatron-LM's main_grad does),
/// an fp32 master copy (4), and Adam's two fp32 moments (4 + 4): 16 or 18 bytes per parameter
/// (Rajbhandari et al. 2020, ZeRO, Sec. 3.1; Korthikanti et al. 2022 use 18).

#include <cstdint>
#include <string_view>

#include "ir/dtype.h"
#include "ir/stage_estimate.h"
#include "ir/training_setup.h"
#include "util/expected.h"

namespace autopar::cost {

using ir::OptimizerState;

struct OptimizerSpec {
  /// Gradients accumulate in fp32 (Megatron-LM's default main_grad): 18 bytes/param, else 16.
  bool fp32Gradients = true;
  /// Adam keeps two moments; SGD with momentum would keep one.
  int fp32MomentsPerParameter = 2;
  OptimizerState state = OptimizerState::kFp32;
  /// Autograd's 16-bit gradients stay allocated beside the fp32 ones, which are cast back to the
  /// weight's dtype to be reduced (DeepSpeed's BF16_Optimizer: deepspeed/runtime/
  /// bf16_optimizer.py, fp32_groups_gradients_flat and clear_lp_grads).
  bool keepsLowPrecisionGradients = false;

  /// Whether an fp32 accumulator sits beside the 16-bit gradient autograd keeps.
  [[nodiscard]] bool keepsBothGradients() const {
    return fp32Gradients && keepsLowPrecisionGradients;
  }
  /// Bytes per element of a weight of `weightBytes` that gradients accumulate in: 4, or the
  /// weight's own.
  [[nodiscard]] int64_t accumulatorBytes(int64_t weightBytes) const {
    return fp32Gradients ? 4 : weightBytes;
  }
  /// Bytes of gradient held per element: the accumulator, and the kept 16-bit gradient.
  [[nodiscard]] int64_t heldGradientBytes(int64_t weightBytes) const {
    return accumulatorBytes(weightBytes) + (keepsBothGradients() ? weightBytes : 0);
  }
  /// Bytes per element the data-parallel reduction moves: the accumulator, or the 16-bit cast
  /// where both are kept.
  [[nodiscard]] int64_t reducedGradientBytes(int64_t weightBytes) const {
    return keepsBothGradients() ? weightBytes : accumulatorBytes(weightBytes);
  }
};

/// The optimizer a setup runs: how its gradients accumulate and are kept, and its states.
/// Example: bf16 under Megatron-DeepSpeed with ZeRO 0 -> fp32Gradients and
/// keepsLowPrecisionGradients (BF16_Optimizer), so 6 bytes held and 2 reduced per element.
OptimizerSpec optimizerSpecOf(const ir::TrainingSetup& setup);

/// "fp32", "remainders", "bf16" or "fp32-moments"; the error lists them.
Expected<OptimizerState> parseOptimizerState(std::string_view name);

/// Per element of a weight stored as `dtype`: the master copy's bytes and one moment's.
/// Example: bf16 under kRemainders -> master 2, moment 4.
struct OptimizerStateBytes {
  int64_t master = 0;
  int64_t moment = 0;
};
OptimizerStateBytes optimizerStateBytes(ir::DType dtype, OptimizerState state);

struct ParameterStateBytes {
  int64_t weight = 0;  ///< the parameter in its own dtype
  int64_t gradient = 0;
  int64_t optimizer = 0;  ///< fp32 master copy (when the weight is not fp32) + moments
  [[nodiscard]] int64_t total() const { return weight + gradient + optimizer; }
};

/// State bytes for `elements` parameter elements stored as `dtype`.
/// Example: 1 bf16 element with fp32 gradients -> weight 2, gradient 4, optimizer 12 (total 18).
ParameterStateBytes parameterStateBytes(int64_t elements, ir::DType dtype,
                                        const OptimizerSpec& optimizer);

/// Declared in ir/stage_estimate.h, beside the stage record that holds it.
using ir::MemoryBreakdown;

}  // namespace autopar::cost
