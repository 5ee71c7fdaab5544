// solveIlp (intra_op_solver.h): Alpa's integer program, solved with CBC through its Osi/Clp
// interface.

#include <fmt/format.h>

#include <CbcModel.hpp>
#include <CoinModel.hpp>
#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "search/intra_op/intra_op_solver.h"

namespace autopar::search {

namespace {

using ir::IntraOpProblem;
using ir::kInfiniteCost;

/// Strategy s of `v` is dominated by t when t costs no more, uses no more memory, and no edge
/// charges more for t than for s against any strategy of the other node. Returns the strategies
/// kept per node (finite ones that no kept strategy dominates; ties keep the lower index).
std::vector<std::vector<int>> undominated(const IntraOpProblem& problem,
                                          const std::vector<std::vector<int>>& incident) {
  std::vector<std::vector<int>> kept(problem.nodes.size());
  for (size_t v = 0; v < problem.nodes.size(); ++v) {
    const auto& node = problem.nodes[v];
    const int count = problem.strategies(static_cast<int>(v));
    auto noWorse = [&](int t, int s) {
      if (node.costs[static_cast<size_t>(t)] > node.costs[static_cast<size_t>(s)]) return false;
      if (node.usages[static_cast<size_t>(t)] > node.usages[static_cast<size_t>(s)]) return false;
      for (int e : incident[v]) {
        const auto& edge = problem.edges[static_cast<size_t>(e)];
        const bool from = edge.from == static_cast<int>(v);
        const int width = problem.strategies(edge.to);
        const int others = problem.strategies(from ? edge.to : edge.from);
        for (int o = 0; o < others; ++o) {
          const auto at = [&](int mine) {
            return from ? edge.costs[static_cast<size_t>(mine) * width + o]
                        : edge.costs[static_cast<size_t>(o) * width + mine];
          };
          if (at(t) > at(s)) return false;
        }
      }
      return true;
    };
    for (int s = 0; s < count; ++s) {
      if (node.costs[static_cast<size_t>(s)] >= kInfiniteCost) continue;
      bool dominated = false;
      for (int t = 0; t < count && !dominated; ++t) {
        if (t == s || node.costs[static_cast<size_t>(t)] >= kInfiniteCost) continue;
        // Equal strategies: keep the lower index only.
        dominated = noWorse(t, s) && (!noWorse(s, t) || t < s);
      }
      if (!dominated) kept[v].push_back(s);
    }
  }
  return kept;
}

struct Model {
  CoinModel model;
  std::vector<std::vector<int>> column;      ///< per node, per kept strategy: its column
  std::vector<std::vector<int>> pairColumn;  ///< per edge, per kept pair (i * |b| + j), or -1
  int columns = 0;
};

Model buildModel(const IntraOpProblem& problem, const std::vector<std::vector<int>>& kept) {
  Model m;
  int columns = 0;
  for (size_t v = 0; v < problem.nodes.size(); ++v) {
    std::vector<int> rowColumns;
    for (int s : kept[v]) {
      const int col = columns++;
      m.model.setColumnBounds(col, 0.0, 1.0);
      m.model.setObjective(col,
                           static_cast<double>(problem.nodes[v].costs[static_cast<size_t>(s)]));
      m.model.setInteger(col);
      rowColumns.push_back(col);
    }
    m.column.push_back(rowColumns);
    std::vector<double> ones(rowColumns.size(), 1.0);
    m.model.addRow(static_cast<int>(rowColumns.size()), rowColumns.data(), ones.data(), 1.0, 1.0);
  }
  // Edges: y[i][j] >= 0 with sum_j y = x_from[i] and sum_i y = x_to[j]; pairs of infinite cost
  // are left out, which forbids them.
  for (const auto& edge : problem.edges) {
    const auto& a = kept[static_cast<size_t>(edge.from)];
    const auto& b = kept[static_cast<size_t>(edge.to)];
    const int width = problem.strategies(edge.to);
    std::vector<std::vector<int>> rowsA(a.size());
    std::vector<std::vector<int>> rowsB(b.size());
    std::vector<int>& pairs = m.pairColumn.emplace_back(a.size() * b.size(), -1);
    for (size_t i = 0; i < a.size(); ++i) {
      for (size_t j = 0; j < b.size(); ++j) {
        const int64_t cost = edge.costs[static_cast<size_t>(a[i]) * width + b[j]];
        if (cost >= kInfiniteCost) continue;
        const int col = columns++;
        pairs[i * b.size() + j] = col;
        m.model.setColumnBounds(col, 0.0, 1.0);
        m.model.setObjective(col, static_cast<double>(cost));
        rowsA[i].push_back(col);
        rowsB[j].push_back(col);
      }
    }
    auto marginal = [&](std::vector<int> cols, int x) {
      std::vector<double> coef(cols.size(), 1.0);
      cols.push_back(x);
      coef.push_back(-1.0);
      m.model.addRow(static_cast<int>(cols.size()), cols.data(), coef.data(), 0.0, 0.0);
    };
    for (size_t i = 0; i < a.size(); ++i)
      marginal(rowsA[i], m.column[static_cast<size_t>(edge.from)][i]);
    for (size_t j = 0; j < b.size(); ++j)
      marginal(rowsB[j], m.column[static_cast<size_t>(edge.to)][j]);
  }
  m.columns = columns;
  return m;
}

/// One memory row per moment a node starts: the live set only grows there.
void addMemoryRows(const IntraOpProblem& problem, const std::vector<std::vector<int>>& kept,
                   Model& m) {
  if (problem.usageLimit < 0) return;
  std::vector<int64_t> starts;
  for (const auto& node : problem.nodes) {
    if (node.end > node.start) starts.push_back(node.start);
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  for (int64_t t : starts) {
    std::vector<int> cols;
    std::vector<double> coef;
    for (size_t v = 0; v < problem.nodes.size(); ++v) {
      const auto& node = problem.nodes[v];
      if (node.start > t || t >= node.end) continue;
      for (size_t i = 0; i < kept[v].size(); ++i) {
        const int64_t usage = node.usages[static_cast<size_t>(kept[v][i])];
        if (usage == 0) continue;
        cols.push_back(m.column[v][i]);
        coef.push_back(static_cast<double>(usage));
      }
    }
    if (cols.empty()) continue;
    m.model.addRow(static_cast<int>(cols.size()), cols.data(), coef.data(), -COIN_DBL_MAX,
                   static_cast<double>(problem.usageLimit));
  }
}

/// The columns of `solution` (kept strategies only), or empty when it uses a pruned strategy or a
/// forbidden pair.
std::vector<double> startColumns(const IntraOpProblem& problem,
                                 const std::vector<std::vector<int>>& kept, const Model& m,
                                 const std::vector<int>& solution) {
  std::vector<double> columns(static_cast<size_t>(m.columns), 0.0);
  std::vector<size_t> index(problem.nodes.size());
  for (size_t v = 0; v < problem.nodes.size(); ++v) {
    auto it = std::find(kept[v].begin(), kept[v].end(), solution[v]);
    if (it == kept[v].end()) return {};
    index[v] = static_cast<size_t>(it - kept[v].begin());
    columns[static_cast<size_t>(m.column[v][index[v]])] = 1.0;
  }
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    const auto& edge = problem.edges[e];
    const size_t width = kept[static_cast<size_t>(edge.to)].size();
    const int col = m.pairColumn[e][index[static_cast<size_t>(edge.from)] * width +
                                    index[static_cast<size_t>(edge.to)]];
    if (col < 0) return {};
    columns[static_cast<size_t>(col)] = 1.0;
  }
  return columns;
}

}  // namespace

Expected<SolveResult> solveIlp(const IntraOpProblem& problem, const SolveOptions& options) {
  if (auto status = ir::validateProblem(problem); !status) return status.error();
  SolveResult result;
  std::vector<std::vector<int>> incident(problem.nodes.size());
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    incident[static_cast<size_t>(problem.edges[e].from)].push_back(static_cast<int>(e));
    incident[static_cast<size_t>(problem.edges[e].to)].push_back(static_cast<int>(e));
  }
  const auto kept = undominated(problem, incident);
  for (size_t v = 0; v < kept.size(); ++v) {
    if (kept[v].empty()) {
      result.status = fmt::format("infeasible: node {} has only infinite-cost strategies", v);
      return result;
    }
  }
  Model m = buildModel(problem, kept);
  addMemoryRows(problem, kept, m);
  OsiClpSolverInterface solver;
  solver.loadFromCoinModel(m.model);
  solver.messageHandler()->setLogLevel(0);
  CbcModel cbc(solver);
  cbc.setLogLevel(0);
  cbc.setMaximumSeconds(options.timeLimitSeconds);
  cbc.setRandomSeed(static_cast<int>(options.seed));
  cbc.setNumberThreads(1);
  if (options.incumbent.size() == problem.nodes.size()) {
    auto evaluation = ir::evaluateSolution(problem, options.incumbent);
    const auto start = startColumns(problem, kept, m, options.incumbent);
    if (evaluation && evaluation->feasible && !start.empty()) {
      cbc.setBestSolution(start.data(), static_cast<int>(start.size()),
                          static_cast<double>(evaluation->cost), true);
    }
  }
  cbc.branchAndBound();
  result.lowerBound = cbc.getBestPossibleObjValue();
  if (cbc.bestSolution() == nullptr) {
    result.status = cbc.isProvenInfeasible()
                        ? "infeasible: no choice of strategies keeps memory within the usage limit"
                        : "time limit: no feasible solution found";
    return result;
  }
  const double* values = cbc.bestSolution();
  result.solution.assign(problem.nodes.size(), 0);
  for (size_t v = 0; v < problem.nodes.size(); ++v) {
    for (size_t i = 0; i < kept[v].size(); ++i) {
      if (values[m.column[v][i]] > 0.5) result.solution[v] = kept[v][i];
    }
  }
  result.evaluation = *ir::evaluateSolution(problem, result.solution);
  result.optimal = cbc.isProvenOptimal();
  const double cost = static_cast<double>(result.evaluation.cost);
  result.status = result.optimal
                      ? "optimal"
                      : fmt::format("time limit, gap {:.2f}%",
                                    cost > 0 ? 100.0 * (cost - result.lowerBound) / cost : 0.0);
  return result;
}

Expected<SolveResult> solvePortfolio(const IntraOpProblem& problem, const SolveOptions& options) {
  int64_t entries = 0;
  for (const auto& edge : problem.edges) entries += static_cast<int64_t>(edge.costs.size());
  if (entries > kIlpEdgeEntries) return solveLocalSearch(problem, options);
  const auto begin = std::chrono::steady_clock::now();
  SolveOptions local = options;
  local.timeLimitSeconds = options.timeLimitSeconds / 10;
  auto heuristic = solveLocalSearch(problem, local);
  if (!heuristic) return heuristic.error();
  if (heuristic->optimal) return heuristic;  // its Lagrangian bound meets its cost
  SolveOptions exact = options;
  exact.incumbent = heuristic->solution;
  exact.timeLimitSeconds = std::max(
      0.1, options.timeLimitSeconds -
               std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
  auto ilp = solveIlp(problem, exact);
  if (!ilp) return ilp.error();
  if (ilp->optimal || heuristic->solution.empty()) return ilp;
  // Both bounds hold; the better one is kept whichever solution wins.
  const double bound = std::max(ilp->lowerBound, heuristic->lowerBound);
  if (ilp->solution.empty() || heuristic->evaluation.cost < ilp->evaluation.cost) {
    heuristic->lowerBound = bound;
    heuristic->status += fmt::format(" (ILP: {})", ilp->status);
    return heuristic;
  }
  ilp->lowerBound = bound;
  return ilp;
}

}  // namespace autopar::search
