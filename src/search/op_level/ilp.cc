#include "search/op_level/ilp.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>

#include "ir/setting.h"
#include "search/op_level/edge_cost.h"
#include "search/op_level/objective.h"

namespace autopar::search {

namespace {

int64_t nanoseconds(double seconds) { return std::llround(seconds * 1e9); }

struct Extractor {
  const ir::Graph& graph;
  const std::vector<int>& ranks;
  const cluster::Cluster& cluster;
  const cost::CostConstants& deviceConstants;
  EdgeCostCache edges;
  std::vector<rules::ShardingRule> rules;
  std::vector<std::vector<rules::ShardedOp>> sharded;  ///< per op, per candidate

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
        auto cost = nodeCost(graph, op, *shard, cluster, deviceConstants, edges);
        if (!cost) return cost.error().in(fmt::format("op '{}'", op.name));
        node.costs.push_back(nanoseconds(cost->seconds));
        node.usages.push_back(cost->bytes);
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
        const ir::OpId producer = tensor.producer;
        auto [it, added] =
            index.emplace(std::make_pair(producer, consumer.id), out.problem.edges.size());
        const auto& from = sharded[producer];
        const auto& to = sharded[consumer.id];
        if (added) {
          out.problem.edges.push_back(
              {producer, consumer.id, std::vector<int64_t>(from.size() * to.size(), 0)});
        }
        auto& costs = out.problem.edges[it->second].costs;
        for (size_t a = 0; a < from.size(); ++a) {
          for (size_t b = 0; b < to.size(); ++b) {
            auto seconds = inputEdgeSeconds(graph, consumer, i, from[a], to[b], edges);
            if (!seconds) return seconds.error();
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
                                              const cost::CostConstants& costModel,
                                              const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                              int64_t memoryLimitBytes, bool enableAllToAll) {
  Extractor extractor{graph,
                      ranks,
                      cluster,
                      costModel.forDevice(cluster.device.name),
                      EdgeCostCache(cluster, layout::RedistributionOptions{enableAllToAll}),
                      {},
                      {}};
  IlpExtraction out;
  out.problem.name = graph.name();
  out.problem.usageLimit = memoryLimitBytes;
  if (auto status = extractor.addNodes(fixed, out); !status) return status.error();
  if (auto status = extractor.addEdges(out); !status) return status.error();
  return out;
}

TiedProblem tieRepeatedLayers(const ir::Graph& graph, const IlpExtraction& extraction) {
  const ir::IntraOpProblem& original = extraction.problem;
  // The k-th op of each layer, keyed by (stack prefix, k); the first layer's op represents them.
  std::map<std::string, int> ordinal;  // block -> ops seen in it
  std::map<std::pair<std::string, int>, int> first;
  std::vector<int> rep(original.nodes.size());
  for (const ir::Op& op : graph.ops()) {
    rep[op.id] = op.id;
    if (!ir::isStackLayer(op.block)) continue;
    const std::string prefix = op.block.substr(0, op.block.rfind('.'));
    const int k = ordinal[op.block]++;
    auto [it, added] = first.emplace(std::make_pair(prefix, k), op.id);
    const ir::Op& leader = graph.op(it->second);
    if (!added && leader.kind == op.kind &&
        extraction.candidates[leader.id] == extraction.candidates[op.id]) {
      rep[op.id] = it->second;
    }
  }
  TiedProblem tied;
  tied.problem.name = original.name;
  tied.problem.usageLimit = original.usageLimit;
  std::vector<int> index(original.nodes.size(), -1);
  for (size_t v = 0; v < original.nodes.size(); ++v) {
    if (rep[v] != static_cast<int>(v)) continue;
    index[v] = static_cast<int>(tied.problem.nodes.size());
    tied.problem.nodes.push_back(original.nodes[v]);
  }
  for (size_t v = 0; v < original.nodes.size(); ++v) {
    tied.representative.push_back(index[static_cast<size_t>(rep[v])]);
    if (rep[v] == static_cast<int>(v)) continue;
    auto& node = tied.problem.nodes[static_cast<size_t>(tied.representative.back())];
    for (size_t s = 0; s < node.costs.size(); ++s) {
      node.costs[s] = ir::saturatingAdd(node.costs[s], original.nodes[v].costs[s]);
      node.usages[s] += original.nodes[v].usages[s];
    }
  }
  std::map<std::pair<int, int>, size_t> edgeIndex;
  for (const auto& edge : original.edges) {
    const int a = tied.representative[static_cast<size_t>(edge.from)];
    const int b = tied.representative[static_cast<size_t>(edge.to)];
    const int width = original.strategies(edge.to);
    if (a == b) {  // both ends tied to one node: only equal strategies can occur
      auto& node = tied.problem.nodes[static_cast<size_t>(a)];
      for (size_t s = 0; s < node.costs.size(); ++s) {
        node.costs[s] =
            ir::saturatingAdd(node.costs[s], edge.costs[s * static_cast<size_t>(width) + s]);
      }
      continue;
    }
    auto [it, added] = edgeIndex.emplace(std::make_pair(a, b), tied.problem.edges.size());
    if (added) tied.problem.edges.push_back({a, b, std::vector<int64_t>(edge.costs.size(), 0)});
    auto& costs = tied.problem.edges[it->second].costs;
    for (size_t k = 0; k < costs.size(); ++k) costs[k] = ir::saturatingAdd(costs[k], edge.costs[k]);
  }
  return tied;
}

namespace {

/// `value` counted `copies` times, infinite staying infinite.
int64_t times(int64_t value, double copies) {
  if (value >= ir::kInfiniteCost) return value;
  const double scaled = static_cast<double>(value) * copies;
  return scaled >= static_cast<double>(ir::kInfiniteCost) ? ir::kInfiniteCost
                                                          : std::llround(scaled);
}

/// Each node's costs and usages counted as often as its op stands for, each edge's as often as
/// its lighter end (OpCopies).
void weighByCopies(const OpCopies& copies, ir::IntraOpProblem& problem) {
  for (size_t v = 0; v < problem.nodes.size(); ++v) {
    const double count = copies.of(static_cast<ir::OpId>(v));
    for (int64_t& cost : problem.nodes[v].costs) cost = times(cost, count);
    for (int64_t& usage : problem.nodes[v].usages) usage = times(usage, count);
  }
  for (ir::IntraOpProblem::Edge& edge : problem.edges) {
    const double count = copies.ofEdge(edge.from, edge.to);
    for (int64_t& cost : edge.costs) cost = times(cost, count);
  }
}

Expected<SolveResult> solveExtraction(const ir::Graph& graph, const IlpExtraction& extraction,
                                      const SolveOptions& options, bool tieLayers) {
  if (!tieLayers) return solvePortfolio(extraction.problem, options);
  const TiedProblem tied = tieRepeatedLayers(graph, extraction);
  auto solve = solvePortfolio(tied.problem, options);
  if (solve && !solve->solution.empty()) {
    std::vector<int> expanded;
    for (int r : tied.representative) expanded.push_back(solve->solution[static_cast<size_t>(r)]);
    solve->solution = std::move(expanded);
    solve->evaluation = *ir::evaluateSolution(extraction.problem, solve->solution);
    solve->status += fmt::format(" (layers tied: {} of {} ops decided)", tied.problem.nodes.size(),
                                 extraction.problem.nodes.size());
  }
  return solve;
}

}  // namespace

Expected<IlpSearchResult> searchIlp(const ir::Graph& graph, const std::vector<int>& ranks,
                                    const cluster::Cluster& cluster,
                                    const cost::CostConstants& costModel,
                                    const std::map<ir::OpId, rules::FactorCuts>& fixed,
                                    int64_t memoryLimitBytes, const SolveOptions& options,
                                    bool enableAllToAll, bool tieLayers, const OpCopies& copies) {
  auto extraction = extractIntraOpProblem(graph, ranks, cluster, costModel, fixed, memoryLimitBytes,
                                          enableAllToAll);
  if (!extraction) return extraction.error();
  weighByCopies(copies, extraction->problem);
  auto solve = solveExtraction(graph, *extraction, options, tieLayers);
  if (!solve) return solve.error();
  IlpSearchResult result;
  if (solve->solution.empty() && extraction->problem.usageLimit >= 0) {
    // The planner then reports the plan against the device and plans the fixes that fit.
    extraction->problem.usageLimit = -1;
    solve = solveExtraction(graph, *extraction, options, tieLayers);
    if (!solve) return solve.error();
    result.memoryLimitDropped = true;
  }
  if (solve->solution.empty()) {
    return Error{fmt::format("{}: {} (memory limit {} bytes per device)",
                             ir::flag(ir::Setting::kSearch, "ilp"), solve->status,
                             memoryLimitBytes)};
  }
  for (size_t op = 0; op < solve->solution.size(); ++op) {
    result.cuts.push_back(extraction->candidates[op][static_cast<size_t>(solve->solution[op])]);
    result.variables += static_cast<int64_t>(extraction->candidates[op].size());
  }
  result.solve = std::move(*solve);
  return result;
}

}  // namespace autopar::search
