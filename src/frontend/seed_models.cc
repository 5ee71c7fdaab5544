#include "frontend/seed_models.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace autopar::frontend {

namespace {

/// nn.Dense(inFeatures, outFeatures) as "<name>.matmul" and "<name>.bias_add"; returns the output.
Expected<ir::TensorId> addDense(ir::Graph& graph, const std::string& name, ir::TensorId input,
                                int64_t inFeatures, int64_t outFeatures) {
  auto weight = graph.addTensor(name + ".weight", {{inFeatures, outFeatures}, ir::DType::kF32},
                                ir::TensorRole::kParameter);
  if (!weight) return weight.error();
  auto bias =
      graph.addTensor(name + ".bias", {{outFeatures}, ir::DType::kF32}, ir::TensorRole::kParameter);
  if (!bias) return bias.error();
  const std::string matmulName = name + ".matmul";
  auto matmul = graph.addOp(matmulName, ir::OpKind::kMatMul, {}, {input, *weight}, {matmulName});
  if (!matmul) return matmul.error();
  const std::string biasName = name + ".bias_add";
  auto biasAdd = graph.addOp(biasName, ir::OpKind::kAdd, {},
                             {graph.op(*matmul).outputs.front(), *bias}, {biasName});
  if (!biasAdd) return biasAdd.error();
  return graph.op(*biasAdd).outputs.front();
}

/// Dense layers "<prefix>1".."<prefix>N" over `widths` (input width first) with "relu1".. between
/// them; x is the input [batch, widths[0]].
Expected<ir::Graph> buildDenseStack(const std::string& graphName, const std::string& prefix,
                                    const std::vector<int64_t>& widths, int64_t batch) {
  if (batch <= 0) {
    return Error{fmt::format("{}: batch: expected a positive size, got {}", graphName, batch)};
  }
  ir::Graph graph(graphName);
  auto x = graph.addTensor("x", {{batch, widths.front()}, ir::DType::kF32}, ir::TensorRole::kInput);
  if (!x) return x.error().in(graphName);
  ir::TensorId hidden = *x;
  for (size_t layer = 1; layer < widths.size(); ++layer) {
    auto dense = addDense(graph, fmt::format("{}{}", prefix, layer), hidden, widths[layer - 1],
                          widths[layer]);
    if (!dense) return dense.error().in(graphName);
    hidden = *dense;
    if (layer + 1 == widths.size()) break;
    const std::string reluName = fmt::format("relu{}", layer);
    auto relu = graph.addOp(reluName, ir::OpKind::kReLU, {}, {hidden}, {reluName});
    if (!relu) return relu.error().in(graphName);
    hidden = graph.op(*relu).outputs.front();
  }
  return graph;
}

}  // namespace

Expected<ir::Graph> buildFfn(int64_t batch) {
  // nn.Dense(28*28, 512), (512, 256), (256, 128), (128, 64), (64, 10) in seed 002's FFN.
  return buildDenseStack("ffn", "dense", {784, 512, 256, 128, 64, 10}, batch);
}

Expected<ir::Graph> buildAnnotatedFfn(int64_t batch) {
  auto graph = buildFfn(batch);
  if (!graph) return graph;
  graph->mutableOp(*graph->findOp("dense1.matmul")).shard = {{2, 4}, {4, 1}};
  graph->mutableOp(*graph->findOp("dense3.matmul")).shard = {{1, 8}, {8, 1}};
  return graph;
}

Expected<ir::Graph> buildSeedMlp(int64_t batch) {
  // nn.Dense(28*28, 512), (512, 512), (512, 1) in seed 002's recursive-programming Network.
  return buildDenseStack("mlp", "layer", {784, 512, 512, 1}, batch);
}

}  // namespace autopar::frontend
