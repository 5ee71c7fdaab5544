// Model-state memory of LLaMA2-7B trained with mixed-precision Adam and no sharding must match the
// parameter-state formula: 16 bytes per parameter (bf16 weight and gradient, fp32 master copy and
// two moments) or 18 with fp32 gradient accumulation (Rajbhandari et al. 2020; Korthikanti et al.
// 2022). The parameter count is computed here from the architecture, not read from the graph.

#include <gtest/gtest.h>

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

TEST(ModelStateMemory, Llama2SevenBillionMatchesSixteenAndEighteenBytesPerParameter) {
  auto config = frontend::transformerPreset("llama2-7b");
  ASSERT_TRUE(config.ok());
  const int64_t parameters = llamaParameterCount(*config);
  EXPECT_EQ(parameters, 6738415616);  // the published LLaMA-2-7B count

  auto graph = frontend::buildTransformer(*config);
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  auto cluster = cluster::clusterPreset("dgx-a100-80g");
  ASSERT_TRUE(cluster.ok());
  auto one = cluster::takeDevices(*cluster, 1);
  ASSERT_TRUE(one.ok());
  const planner::LoadedModel model{std::move(*graph), "llama2-7b", config->microBatch, config->seq};

  for (bool fp32Gradients : {true, false}) {
    planner::PlanOptions options;
    options.search = "data_parallel";
    options.training.fp32Gradients = fp32Gradients;
    auto evaluated = planner::evaluateModel(model, options, *one);
    ASSERT_TRUE(evaluated.ok()) << evaluated.error().message;
    const cost::CostReport* report = &evaluated->report;
    const double bytesPerParameter = fp32Gradients ? 18.0 : 16.0;
    const double expected = bytesPerParameter * static_cast<double>(parameters);
    EXPECT_NEAR(static_cast<double>(modelStateBytes(*report)), expected, 0.01 * expected);
    EXPECT_GT(report->memory.activationBytes, 0);
    // 121 GB of model states cannot fit one 80 GB device.
    EXPECT_GT(report->memory.total(), one->device.memoryBytes);
  }
}

}  // namespace
}  // namespace autopar
