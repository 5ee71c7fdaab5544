#include "search/ilp.h"

#include <fmt/format.h>

#include <cmath>

#include "cost/memory.h"
#include "cost/op_cost.h"
#include "search/edge_cost.h"

namespace autopar::search {

namespace {

int64_t nanoseconds(double seconds) { return std::llround(seconds * 1e9); }

struct Extractor {
  const ir::Graph& graph;
  const std::vector<int>& ranks;
  const cluster::Cluster& cluster;
  EdgeCostCache edges;
  std::vector<rules::ShardingRule> rules;
  std::vector<std::vector<rules::ShardedOp>> sharded;  ///< per op, per candidate

  /// The op's cost and memory under one candidate.
  Expected<std::pair<int64_t, int64_t>> nodeCost(const ir::Op& op, const rules::ShardedOp& shard) {
    auto cost = cost::costOfOp(graph, op, shard, cluster);
    if (!cost) return cost.error();
    double seconds = cost->totalSeconds();
    int64_t bytes = 0;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const ir::Tensor& tensor = graph.tensor(op.inputs[i]);
      if (!tensor.isParameter() || tensor.consumers.front() != op.id) continue;
      // Stored as this op needs it; its gradient reduces over the axes the op leaves partial.
      auto sync = edges.edgeSeconds(shard.inputs[i], shard.inputs[i], shard.inputGradPartialAxes[i],
                                    ir::dtypeBytes(tensor.type.dtype), true);
      if (!sync) return sync.error();
      seconds += *sync;
      bytes +=
          cost::parameterStateBytes(shard.inputs[i].sliceElements(), tensor.type.dtype, {}).total();
    }
    for (const ir::SavedTensor& saved : graph.backwardRule(op).saved) {
      using Source = ir::SavedTensor::Source;
      if (saved.source == Source::kExtra) {
        bytes += static_cast<int64_t>(static_cast<double>(saved.bytes) * shard.computeFraction);
        continue;
      }
      const bool input = saved.source == Source::kInput;
      const ir::TensorId id = input ? op.inputs[saved.index] : op.outputs[saved.index];
      if (graph.tensor(id).isParameter()) continue;
      const auto& layout = input ? shard.inputs[saved.index] : shard.outputs[saved.index];
      bytes += layout.sliceElements() * ir::dtypeBytes(graph.tensor(id).type.dtype);
    }
    return std::make_pair(nanoseconds(seconds), bytes);
  }

  Status addNodes(const std::map<ir::OpId, rules::FactorCuts>& fixed, IlpExtraction& out) {
    for (const ir::Op& op : graph.ops()) {
      auto rule = rules::shardingRuleFor(graph, op);
      if (!rule) return rule.error().in(fmt::format("op '{}'", op.name));
      auto it = fixed.find(op.id);
      auto candidates = it != fixed.end()
                            ? std::vector<rules::FactorCuts>{it->second}
                            : rules::fullDeviceCuts(*rule, static_cast<int64_t>(ranks.size()));
      ir::IntraOpProblem::Node node{0, 1, {}, {}};
      std::vector<rules::ShardedOp> shards;
      for (const auto& cuts : candidates) {
        auto shard = rules::applyFactorCuts(*rule, cuts, ranks);
        if (!shard) return shard.error().in(fmt::format("op '{}'", op.name));
        auto cost = nodeCost(op, *shard);
        if (!cost) return cost.error().in(fmt::format("op '{}'", op.name));
        node.costs.push_back(cost->first);
        node.usages.push_back(cost->second);
        shards.push_back(std::move(*shard));
      }
      out.problem.nodes.push_back(std::move(node));
      out.candidates.push_back(std::move(candidates));
      rules.push_back(std::move(*rule));
      sharded.push_back(std::move(shards));
    }
    return {};
  }

  /// One edge per (producer, consumer) pair, summing every tensor between them.
  Status addEdges(IlpExtraction& out) {
    std::map<std::pair<ir::OpId, ir::OpId>, size_t> index;
    for (const ir::Op& consumer : graph.ops()) {
      for (size_t i = 0; i < consumer.inputs.size(); ++i) {
        const ir::Tensor& tensor = graph.tensor(consumer.inputs[i]);
        if (tensor.producer == ir::kNoOp) continue;
        const ir::Op& producer = graph.op(tensor.producer);
        size_t output = 0;
        while (producer.outputs[output] != tensor.id) ++output;
        auto [it, added] =
            index.emplace(std::make_pair(producer.id, consumer.id), out.problem.edges.size());
        const auto& from = sharded[producer.id];
        const auto& to = sharded[consumer.id];
        if (added) {
          out.problem.edges.push_back(
              {producer.id, consumer.id, std::vector<int64_t>(from.size() * to.size(), 0)});
        }
        auto& costs = out.problem.edges[it->second].costs;
        for (size_t a = 0; a < from.size(); ++a) {
          for (size_t b = 0; b < to.size(); ++b) {
            auto seconds = edges.edgeSeconds(
                from[a].outputs[output], to[b].inputs[i], to[b].inputGradPartialAxes[i],
                ir::dtypeBytes(tensor.type.dtype), ir::isFloating(tensor.type.dtype));
            if (!seconds) return seconds.error().in(fmt::format("tensor '{}'", tensor.name));
            costs[a * to.size() + b] += nanoseconds(*seconds);
          }
        }
      }
    }
    return {};
  }
};

}  // namespace

Expected<IlpExtraction> extractIntraOpProblem(const ir::Graph& graph, const std::vector<int>& ranks,
                                              const cluster::Cluster& cluster,
                                              const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                              int64_t memoryLimitBytes, bool enableAllToAll) {
  Extractor extractor{
      graph, ranks, cluster, EdgeCostCache(cluster, layout::RedistributionOptions{enableAllToAll}),
      {},    {}};
  IlpExtraction out;
  out.problem.name = graph.name();
  out.problem.usageLimit = memoryLimitBytes;
  if (auto status = extractor.addNodes(fixed, out); !status) return status.error();
  if (auto status = extractor.addEdges(out); !status) return status.error();
  return out;
}

Expected<IlpSearchResult> searchIlp(const ir::Graph& graph, const std::vector<int>& ranks,
                                    const cluster::Cluster& cluster,
                                    const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                    int64_t memoryLimitBytes, const SolveOptions& options,
                                    bool enableAllToAll) {
  auto extraction =
      extractIntraOpProblem(graph, ranks, cluster, fixed, memoryLimitBytes, enableAllToAll);
  if (!extraction) return extraction.error();
  auto solve = solveIlp(extraction->problem, options);
  if (!solve) return solve.error();
  if (solve->solution.empty()) {
    return Error{fmt::format("--search ilp: {} (memory limit {} bytes per device)", solve->status,
                             memoryLimitBytes)};
  }
  IlpSearchResult result;
  for (size_t op = 0; op < solve->solution.size(); ++op) {
    result.cuts.push_back(extraction->candidates[op][static_cast<size_t>(solve->solution[op])]);
    result.variables += static_cast<int64_t>(extraction->candidates[op].size());
  }
  result.solve = std::move(*solve);
  return result;
}

}  // namespace autopar::search
