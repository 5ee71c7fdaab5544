// Model-state memory of LLaMA2-7B trained with mixed-precision Adam and no sharding must match the
// parameter-state formula: 16 bytes per parameter (bf16 weight and gradient, fp32 master copy and
// two moments) or 18 with fp32 gradient accumulation (Rajbhandari et al. 2020; Korthikanti et al.
// 2022). The parameter count is computed here from the architecture, not read from the graph.
// NeMo's distributed_fused_adam holds less: 16 bits of remainder for the master copy (16 bytes in
// all) or bf16 moments and no master copy (8 bytes).

#include <gtest/gtest.h>

#include "cost/optimizer_step.h"
#include "frontend/model_presets.h"
#include "frontend/transformer.h"
#include "planner/plan_evaluation.h"

namespace autopar {
namespace {

/// LLaMA parameters: embedding and untied head (2*V*h), per layer Q and O (2*h*h), K and V
/// (2*h*kv*d), gate/up/down (3*h*f) and two RMSNorm weights (2*h), plus the final norm (h).
int64_t llamaParameterCount(const frontend::TransformerConfig& c) {
  const int64_t headDim = c.hidden / c.heads;
  const int64_t perLayer = 2 * c.hidden * c.hidden + 2 * c.hidden * c.kvHeads * headDim +
                           3 * c.hidden * c.ffn + 2 * c.hidden;
  return 2 * c.vocab * c.hidden + c.layers * perLayer + c.hidden;
}

int64_t modelStateBytes(const cost::CostReport& report) {
  return report.memory.parameterBytes + report.memory.gradientBytes + report.memory.optimizerBytes;
}

/// LLaMA2-7B and one A100 to plan it on, data parallel (so unsharded).
struct OneDevice {
  int64_t parameters = 0;
  planner::LoadedModel model;
  cluster::Cluster device;

  /// Gradients in fp32, or in the 16-bit weight's dtype (ir::TrainingSetup::fp32Gradients).
  [[nodiscard]] cost::CostReport evaluate(
      bool fp32Gradients, cost::OptimizerState state = cost::OptimizerState::kFp32) const {
    planner::PlanOptions options;
    options.search = search::SearchMode::kDataParallel;
    options.setup.codePath.gradReduceInBf16 = !fp32Gradients;
    options.setup.optimizerState = state;
    auto evaluated = planner::evaluateModel(model, options, device);
    EXPECT_TRUE(evaluated.ok()) << evaluated.error().message;
    return evaluated.ok() ? evaluated->report : cost::CostReport{};
  }
};

OneDevice llama2OnOneDevice() {
  auto config = frontend::transformerPreset("llama2-7b");
  EXPECT_TRUE(config.ok());
  auto graph = frontend::buildTransformer(*config);
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  EXPECT_TRUE(cluster.ok());
  auto one = cluster::takeDevices(*cluster, 1);
  EXPECT_TRUE(one.ok());
  planner::LoadedModel model{.graph = std::move(*graph),
                             .source = "llama2-7b",
                             .microBatch = config->microBatch,
                             .sequence = config->seq};
  return OneDevice{llamaParameterCount(*config), std::move(model), std::move(*one)};
}

TEST(ModelStateMemory, Llama2SevenBillionMatchesSixteenAndEighteenBytesPerParameter) {
  const OneDevice llama = llama2OnOneDevice();
  const int64_t parameters = llama.parameters;
  EXPECT_EQ(parameters, 6738415616);  // the published LLaMA-2-7B count

  for (bool fp32Gradients : {true, false}) {
    const cost::CostReport report = llama.evaluate(fp32Gradients);
    const double bytesPerParameter = fp32Gradients ? 18.0 : 16.0;
    const double expected = bytesPerParameter * static_cast<double>(parameters);
    EXPECT_NEAR(static_cast<double>(modelStateBytes(report)), expected, 0.01 * expected);
    EXPECT_GT(report.memory.activationBytes, 0);
    // 121 GB of model states cannot fit one 80 GB device.
    EXPECT_GT(report.memory.total(), llama.device.device.memoryBytes);
  }
}

TEST(ModelStateMemory, WithoutAFullMasterCopyTheStatesShrink) {
  const OneDevice llama = llama2OnOneDevice();
  const auto parameters = static_cast<double>(llama.parameters);
  // Weight 2 and fp32 gradient 4, then the optimizer: a 2-byte master remainder and two fp32
  // moments (16 in all), or two bf16 moments and no master (10).
  for (const auto& [state, bytesPerParameter] :
       {std::pair{cost::OptimizerState::kRemainders, 2.0 + 4.0 + 2.0 + 8.0},
        {cost::OptimizerState::kBf16, 2.0 + 4.0 + 4.0}}) {
    const double expected = bytesPerParameter * parameters;
    EXPECT_NEAR(static_cast<double>(modelStateBytes(llama.evaluate(true, state))), expected,
                0.01 * expected);
  }
  // MindFormers' Adam variants: fp32 moments beside the 16-bit weight they update in place, and
  // the gradient in the weight's dtype (MindSpore's): 2 + 2 + 8.
  const double twelve = 12.0 * parameters;
  EXPECT_NEAR(static_cast<double>(
                  modelStateBytes(llama.evaluate(false, cost::OptimizerState::kFp32Moments))),
              twelve, 0.01 * twelve);
  // The optimizer step streams less without a full master copy: no copy back, and bf16 moments.
  const double full = cost::optimizerBytesPerElement(ir::DType::kBF16, cost::OptimizerSpec{});
  cost::OptimizerSpec remainders;
  remainders.state = cost::OptimizerState::kRemainders;
  cost::OptimizerSpec bf16;
  bf16.state = cost::OptimizerState::kBf16;
  EXPECT_EQ(full, 42.0);
  EXPECT_EQ(cost::optimizerBytesPerElement(ir::DType::kBF16, remainders), 36.0);
  EXPECT_EQ(cost::optimizerBytesPerElement(ir::DType::kBF16, bf16), 24.0);
}

}  // namespace
}  // namespace autopar
