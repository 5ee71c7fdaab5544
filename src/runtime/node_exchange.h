#pragma once
/// \file
/// The nodes of a multi-node job that is not one process group (seed 003's sampling cluster:
/// `autopar profile --nnodes N --node-rank R --master-addr A --master-port P`, one launcher per
/// node) hand node 0 one blob each through a c10d TCP store, the store Gloo's rendezvous uses,
/// which node 0 hosts at A:P.
///
/// Node r sets "autopar/nodes/r"; node 0 reads every node's in node order, then sets
/// "autopar/nodes/done" and waits until every other node has seen it (each adds 1 to
/// "autopar/nodes/acked"), so that its store outlives their last request.

#include <chrono>
#include <string>
#include <vector>

#include "util/expected.h"

namespace autopar::runtime {

struct NodeGroup {
  int nodes = 1;
  int nodeRank = 0;
  std::string address = "127.0.0.1";
  int port = 0;
  /// How long node 0 waits for the slowest node's blob (its whole share of the work), and the
  /// others for node 0.
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
};

/// Node 0 gets every node's blob, its own first; the other nodes get an empty list once node 0
/// has them. Errors say which node failed to reach which address:
///   "node 1 of 2: exchanging results through 10.0.0.1:6010: ...".
Expected<std::vector<std::string>> gatherToNodeZero(const NodeGroup& group,
                                                    const std::string& blob);

}  // namespace autopar::runtime
