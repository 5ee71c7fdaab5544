#pragma once
/// \file
/// Alpha-beta cost of collectives over a group of ranks. The algorithm is chosen by the group's
/// span over link levels:
///   - inside one domain of a level: ring (bandwidth-optimal) or tree (latency-optimal), whichever
///     is cheaper for the message size;
///   - across domains with several ranks per domain: hierarchical (reduce-scatter inside, the
///     collective across domains on 1/k of the data, all-gather inside), or a flat ring/tree paced
///     by the slowest level, whichever is cheaper.
///
/// Bytes are per device: all-reduce and broadcast take the buffer size; all-gather the gathered
/// (output) size; reduce-scatter the input (unscattered) size; all-to-all the bytes each device
/// sends in total; send/recv the message size.

#include <cstdint>
#include <span>
#include <string_view>

#include "cluster/cluster.h"

namespace autopar::cluster {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };
enum class Algorithm { kNone, kRing, kTree, kHierarchical, kDirect };

std::string_view collectiveName(Collective collective);  ///< "all_reduce", "all_gather", ...
std::string_view algorithmName(Algorithm algorithm);     ///< "ring", "tree", ...

struct CollectiveCost {
  double seconds = 0;
  Algorithm algorithm = Algorithm::kNone;
  int outermostLevel = 0;  ///< the slowest level the group crosses
};

/// Cost of one collective over `ranks` (physical ranks, any order, no duplicates). A group of one
/// rank costs nothing. For kSendRecv, `ranks` holds the two endpoints.
CollectiveCost collectiveCost(const Cluster& cluster, Collective collective,
                              std::span<const int> ranks, int64_t bytes);

}  // namespace autopar::cluster
