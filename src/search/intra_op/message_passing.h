#pragma once
/// \file
/// Sequential tree-reweighted message passing (TRW-S; Kolmogorov, "Convergent tree-reweighted
/// message passing for energy minimization", PAMI 2006) for the intra-operator problem with its
/// memory limit dropped and each node's usage priced instead:
///
///   minimise  E(x) = sum_v [c_v(x_v) + p_v * m_v(x_v)] + sum_(u,v) c_uv(x_u, x_v)
///
/// where c are the problem's costs, m_v the node's usage and p_v >= 0 a price per unit of usage
/// (setUsagePrice; the Lagrangian search sets p_v to the sum of its multipliers over the node's
/// live interval). Infinite costs become kForbidden, so E stays finite.
///
/// Each sweep passes messages along the node order (the contest's files list nodes
/// topologically), then back. It gives:
///   - lowerBound(): a lower bound on min E, from the messages' reparametrisation split into
///     the monotonic chains TRW-S optimises. It rises towards the bound of the LP relaxation; on
///     a tree it reaches min E.
///   - labels(): one strategy per node, rounded in the forward pass. Node v takes the strategy
///     that is cheapest against the nodes already labelled plus the messages from the later
///     ones, skipping strategies that would leave a later neighbour no finitely priced strategy
///     (forward checking: the contest's files forbid many strategy pairs).
///
/// Example: a chain 0 - 1 with costs c_0 = (0, 5), c_1 = (0, 0), c_01 = ((9, 9), (0, 0)) and no
/// usage price. The first forward pass labels node 0 before node 1 has sent anything, so it takes
/// strategy 0 (E = 9). After the second sweep labels() is (1, 0), E = 5, and lowerBound() = 5: on
/// a tree the bound converges to min E.
///
/// Hand-written: no Debian package offers TRW-S as a library (toulbar2 is packaged as a program
/// only, and OpenGM and libDAI are not packaged).

#include <vector>

#include "ir/intra_op_problem.h"

namespace autopar::search {

class MessagePassing {
 public:
  /// Infinite costs are priced at this: above any real total (the contest's totals stay below
  /// 1e12), small enough that sums of a few thousand stay exact in a double's 53 bits of
  /// mantissa relative to it.
  static constexpr double kForbidden = 1e13;

  explicit MessagePassing(const ir::IntraOpProblem& problem);

  /// Node v's strategies cost `price[v]` per unit of usage on top of their own costs; an empty
  /// vector prices usage at zero. Messages are kept (a warm start).
  void setUsagePrice(const std::vector<double>& price);

  /// One forward and one backward pass; the forward pass also rounds labels().
  void sweep();
  /// One forward pass: labels() rounded again with the backward pass's messages.
  void forward();

  /// A lower bound on min E under the current usage price.
  [[nodiscard]] double lowerBound() const;

  /// The labelling rounded in the last forward pass (strategy 0 everywhere before any sweep).
  [[nodiscard]] const std::vector<int>& labels() const { return labels_; }

  /// The messages, to be restored after an excursion to other prices.
  [[nodiscard]] const std::vector<double>& messages() const { return messages_; }
  void restoreMessages(const std::vector<double>& messages) { messages_ = messages; }

 private:
  struct Incidence {
    int edge;
    bool isFrom;  ///< the node is the edge's first node (the table's row)
  };
  struct Edge {
    int from;
    int to;
    size_t table;   ///< offset of the from x to row-major table in tables_
    size_t toFrom;  ///< offset of the message into `from` in messages_
    size_t toTo;    ///< offset of the message into `to`
  };

  [[nodiscard]] int other(const Incidence& inc) const {
    const Edge& edge = edges_[static_cast<size_t>(inc.edge)];
    return inc.isFrom ? edge.to : edge.from;
  }
  /// The edge's cost with the node at `mine` and the other end at `theirs`.
  [[nodiscard]] double pairCost(const Incidence& inc, int mine, int theirs) const;
  /// c_v + p_v m_v plus every message into v.
  void belief(int v, std::vector<double>& out) const;
  /// Sends v's message along `inc` given v's belief.
  void send(int v, const Incidence& inc, const std::vector<double>& belief);
  /// The forward sweep's labelling of v, the nodes before it labelled.
  void roundLabel(int v);
  void pass(bool forward);

  std::vector<int> strategies_;
  std::vector<size_t> unaryOffset_;
  std::vector<double> cost_;   ///< per (node, strategy): c_v, infinite as kForbidden
  std::vector<double> usage_;  ///< per (node, strategy): m_v
  std::vector<double> unary_;  ///< c_v + p_v m_v
  std::vector<Edge> edges_;
  std::vector<double> tables_;
  std::vector<std::vector<Incidence>> incident_;
  std::vector<double> gamma_;    ///< per node: 1 / its number of chains
  std::vector<int> laterEdges_;  ///< per node: edges to later nodes
  std::vector<double> messages_;
  std::vector<int> labels_;
  std::vector<char> allowed_;    ///< forward checking: per (node, strategy)
  std::vector<double> scratch_;  ///< a message being computed
  std::vector<double> belief_;
  std::vector<int> order_;  ///< roundLabel(): strategies by score
};

}  // namespace autopar::search
