#include "search/intra_op/message_passing.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace autopar::search {

namespace {

constexpr double kUnreachable = std::numeric_limits<double>::infinity();

double finite(int64_t cost) {
  return cost >= ir::kInfiniteCost ? MessagePassing::kForbidden : static_cast<double>(cost);
}

}  // namespace

MessagePassing::MessagePassing(const ir::IntraOpProblem& problem) {
  const size_t nodes = problem.nodes.size();
  for (const auto& node : problem.nodes) {
    strategies_.push_back(static_cast<int>(node.costs.size()));
    unaryOffset_.push_back(cost_.size());
    for (size_t s = 0; s < node.costs.size(); ++s) {
      cost_.push_back(finite(node.costs[s]));
      usage_.push_back(static_cast<double>(node.usages[s]));
    }
  }
  unary_ = cost_;
  incident_.resize(nodes);
  size_t messageSize = 0;
  for (const auto& edge : problem.edges) {
    const auto index = static_cast<int>(edges_.size());
    Edge stored{edge.from, edge.to, tables_.size(), messageSize, 0};
    messageSize += problem.nodes[static_cast<size_t>(edge.from)].costs.size();
    stored.toTo = messageSize;
    messageSize += problem.nodes[static_cast<size_t>(edge.to)].costs.size();
    for (int64_t cost : edge.costs) tables_.push_back(finite(cost));
    edges_.push_back(stored);
    incident_[static_cast<size_t>(edge.from)].push_back({index, true});
    incident_[static_cast<size_t>(edge.to)].push_back({index, false});
  }
  messages_.assign(messageSize, 0.0);
  // Each node lies on max(earlier, later) monotonic chains of the order; TRW-S weighs its costs
  // by the inverse so that the chains' costs add up to the problem's.
  gamma_.resize(nodes);
  laterEdges_.resize(nodes);
  for (size_t v = 0; v < nodes; ++v) {
    int later = 0;
    for (const Incidence& inc : incident_[v]) later += other(inc) > static_cast<int>(v);
    const int earlier = static_cast<int>(incident_[v].size()) - later;
    laterEdges_[v] = later;
    gamma_[v] = 1.0 / std::max({1, earlier, later});
  }
  labels_.assign(nodes, 0);
}

void MessagePassing::setUsagePrice(const std::vector<double>& price) {
  for (size_t v = 0; v < strategies_.size(); ++v) {
    const double perUnit = price.empty() ? 0.0 : price[v];
    for (size_t s = 0; s < static_cast<size_t>(strategies_[v]); ++s) {
      const size_t at = unaryOffset_[v] + s;
      unary_[at] = cost_[at] + perUnit * usage_[at];
    }
  }
}

double MessagePassing::pairCost(const Incidence& inc, int mine, int theirs) const {
  const Edge& edge = edges_[static_cast<size_t>(inc.edge)];
  const auto width = static_cast<size_t>(strategies_[static_cast<size_t>(edge.to)]);
  return inc.isFrom
             ? tables_[edge.table + static_cast<size_t>(mine) * width + static_cast<size_t>(theirs)]
             : tables_[edge.table + static_cast<size_t>(theirs) * width +
                       static_cast<size_t>(mine)];
}

void MessagePassing::belief(int v, std::vector<double>& out) const {
  const size_t offset = unaryOffset_[static_cast<size_t>(v)];
  const auto count = static_cast<size_t>(strategies_[static_cast<size_t>(v)]);
  out.assign(unary_.begin() + static_cast<std::ptrdiff_t>(offset),
             unary_.begin() + static_cast<std::ptrdiff_t>(offset + count));
  for (const Incidence& inc : incident_[static_cast<size_t>(v)]) {
    const Edge& edge = edges_[static_cast<size_t>(inc.edge)];
    const double* in = &messages_[inc.isFrom ? edge.toFrom : edge.toTo];
    for (size_t s = 0; s < count; ++s) out[s] += in[s];
  }
}

void MessagePassing::send(int v, const Incidence& inc, const std::vector<double>& belief) {
  const Edge& edge = edges_[static_cast<size_t>(inc.edge)];
  const double* own = &messages_[inc.isFrom ? edge.toFrom : edge.toTo];
  double* out = &messages_[inc.isFrom ? edge.toTo : edge.toFrom];
  const auto mine = static_cast<size_t>(strategies_[static_cast<size_t>(v)]);
  const auto theirs = static_cast<size_t>(strategies_[static_cast<size_t>(other(inc))]);
  const double gamma = gamma_[static_cast<size_t>(v)];
  const double* table = &tables_[edge.table];
  scratch_.assign(theirs, kUnreachable);
  if (inc.isFrom) {
    // Rows are v's strategies: the inner loop runs along a row, over the other end's.
    for (size_t s = 0; s < mine; ++s) {
      const double base = gamma * belief[s] - own[s];
      const double* row = table + s * theirs;
      for (size_t t = 0; t < theirs; ++t) scratch_[t] = std::min(scratch_[t], base + row[t]);
    }
  } else {
    for (size_t t = 0; t < theirs; ++t) {
      const double* row = table + t * mine;
      double best = kUnreachable;
      for (size_t s = 0; s < mine; ++s) best = std::min(best, gamma * belief[s] - own[s] + row[s]);
      scratch_[t] = best;
    }
  }
  const double least = *std::min_element(scratch_.begin(), scratch_.end());
  for (size_t t = 0; t < theirs; ++t) out[t] = scratch_[t] - least;
}

void MessagePassing::roundLabel(int v) {
  const auto count = static_cast<size_t>(strategies_[static_cast<size_t>(v)]);
  const size_t offset = unaryOffset_[static_cast<size_t>(v)];
  // Cost of each strategy against the labelled nodes and the later nodes' messages.
  std::vector<double>& score = scratch_;
  score.assign(unary_.begin() + static_cast<std::ptrdiff_t>(offset),
               unary_.begin() + static_cast<std::ptrdiff_t>(offset + count));
  for (const Incidence& inc : incident_[static_cast<size_t>(v)]) {
    const int w = other(inc);
    if (w < v) {
      for (size_t s = 0; s < count; ++s) {
        score[s] += pairCost(inc, static_cast<int>(s), labels_[static_cast<size_t>(w)]);
      }
    } else {
      const Edge& edge = edges_[static_cast<size_t>(inc.edge)];
      const double* in = &messages_[inc.isFrom ? edge.toFrom : edge.toTo];
      for (size_t s = 0; s < count; ++s) score[s] += in[s];
    }
  }
  for (size_t s = 0; s < count; ++s) {
    if (!allowed_[offset + s]) score[s] += kForbidden;
  }
  std::vector<int>& order = order_;
  order.resize(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return score[static_cast<size_t>(a)] < score[static_cast<size_t>(b)];
  });
  // Forward checking: the cheapest strategy that leaves every later neighbour a finitely priced
  // strategy among those still allowed; the cheapest outright when none does.
  auto keepsNeighboursAlive = [&](int s) {
    for (const Incidence& inc : incident_[static_cast<size_t>(v)]) {
      const int w = other(inc);
      if (w < v) continue;
      const size_t wOffset = unaryOffset_[static_cast<size_t>(w)];
      bool alive = false;
      for (int t = 0; t < strategies_[static_cast<size_t>(w)] && !alive; ++t) {
        alive = allowed_[wOffset + static_cast<size_t>(t)] && pairCost(inc, s, t) < kForbidden;
      }
      if (!alive) return false;
    }
    return true;
  };
  int chosen = order.front();
  for (int s : order) {
    if (score[static_cast<size_t>(s)] >= kForbidden) break;
    if (keepsNeighboursAlive(s)) {
      chosen = s;
      break;
    }
  }
  labels_[static_cast<size_t>(v)] = chosen;
  for (const Incidence& inc : incident_[static_cast<size_t>(v)]) {
    const int w = other(inc);
    if (w < v) continue;
    const size_t wOffset = unaryOffset_[static_cast<size_t>(w)];
    for (int t = 0; t < strategies_[static_cast<size_t>(w)]; ++t) {
      if (pairCost(inc, chosen, t) >= kForbidden) allowed_[wOffset + static_cast<size_t>(t)] = 0;
    }
  }
}

void MessagePassing::pass(bool forward) {
  const auto nodes = static_cast<int>(strategies_.size());
  if (forward) allowed_.assign(cost_.size(), 1);
  for (int i = 0; i < nodes; ++i) {
    const int v = forward ? i : nodes - 1 - i;
    belief(v, belief_);
    if (forward) roundLabel(v);
    for (const Incidence& inc : incident_[static_cast<size_t>(v)]) {
      if ((other(inc) > v) == forward) send(v, inc, belief_);
    }
  }
}

void MessagePassing::sweep() {
  pass(true);
  pass(false);
}

void MessagePassing::forward() { pass(true); }

double MessagePassing::lowerBound() const {
  // The reparametrised costs split into pieces whose minima add up to a bound: for every edge
  // (u, w) with u earlier, the edge's cost net of both messages plus gamma_u of u's belief; for
  // every node, what its later edges leave of its belief.
  const size_t nodes = strategies_.size();
  std::vector<std::vector<double>> beliefs(nodes);
  double bound = 0;
  for (size_t v = 0; v < nodes; ++v) {
    belief(static_cast<int>(v), beliefs[v]);
    const double share = 1.0 - laterEdges_[v] * gamma_[v];
    bound += share * *std::min_element(beliefs[v].begin(), beliefs[v].end());
  }
  for (const Edge& edge : edges_) {
    const auto rows = static_cast<size_t>(strategies_[static_cast<size_t>(edge.from)]);
    const auto columns = static_cast<size_t>(strategies_[static_cast<size_t>(edge.to)]);
    const bool fromFirst = edge.from < edge.to;
    const int first = fromFirst ? edge.from : edge.to;
    const double gamma = gamma_[static_cast<size_t>(first)];
    const std::vector<double>& firstBelief = beliefs[static_cast<size_t>(first)];
    const double* intoFrom = &messages_[edge.toFrom];
    const double* intoTo = &messages_[edge.toTo];
    double least = kUnreachable;
    for (size_t s = 0; s < rows; ++s) {
      for (size_t t = 0; t < columns; ++t) {
        const double share = gamma * firstBelief[fromFirst ? s : t];
        least = std::min(least,
                         tables_[edge.table + s * columns + t] - intoFrom[s] - intoTo[t] + share);
      }
    }
    bound += least;
  }
  return bound;
}

}  // namespace autopar::search
