// Alpha-beta collective costs. With p ranks, a per-hop latency a and a per-rank one-direction
// bandwidth B at the level the algorithm runs on, and n the bytes per device as collective.h
// defines them (Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication
// Operations in MPICH", IJHPCA 2005; NCCL's performance notes for the ring bus-bandwidth factors):
//   ring all-reduce            2(p-1) a + 2(p-1)/p * n/B
//   ring all-gather / reduce-scatter / all-to-all   (p-1) a + (p-1)/p * n/B
//   tree all-reduce (double binary tree)            2 ceil(log2 p) a + 2 n/B
//   broadcast (pipelined tree)                      ceil(log2 p) a + n/B
//   send/recv                                       a + n/B on the level joining the two ranks
// All-reduce, broadcast and all-to-all over a group spanning several domains of its outermost
// level L, with k ranks in each domain of the level inside it and D domains, can also run
// hierarchically: the inner part over k ranks on the inner level, and the outer part over D
// domains on 1/k of the data, all k ranks of a domain using their own NIC at once (multi-rail).
// The cheapest applicable variant is chosen. Ragged groups (uneven ranks per domain) are costed
// with the largest per-domain count.
//
// All-gather and reduce-scatter run as NCCL runs them: as one ring over all p ranks, whatever
// the group spans. NCCL's tuning model (src/graph/tuning.cc, before the PAT algorithm of 2.23)
// offers no other algorithm for them, and charges a ring step inside a node at the intra-node
// latency and each of the D - 1 steps between nodes at the network's:
//   (p - D) a_inner + (D - 1) a_outer + (p-1)/p * n * max(1/B_inner, 1/(k B_outer)).
// The bandwidth term is the ring's slower link: each rank forwards (p-1)/p of the data over
// the inner level, and the k rings of a domain (one per NIC) each carry 1/k of it between
// domains. At 1536 ranks on 192 nodes the latency alone is 1344 a_inner + 191 a_outer, which a
// hierarchical algorithm would cut to 7 a_inner + 191 a_outer.

#include "cluster/collective.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace autopar::cluster {

namespace {

struct Span {
  int size = 1;
  int outerLevel = 0;  ///< the innermost level whose one domain holds the whole group
  int perDomain = 1;   ///< k: most ranks sharing a domain of level outerLevel-1
  int domains = 1;     ///< D: domains of level outerLevel-1 the group touches
};

/// A level's domains are runs of consecutive ranks, so the group fits in one exactly when its
/// lowest and highest ranks do; the ranks per inner domain are counted along the sorted domain
/// indices (a data-parallel group over a million devices is priced for every configuration the
/// layer-level search screens).
Span spanOf(const Cluster& cluster, std::span<const int> ranks) {
  Span span;
  span.size = static_cast<int>(ranks.size());
  if (ranks.empty()) return span;
  const auto [lowest, highest] = std::minmax_element(ranks.begin(), ranks.end());
  span.outerLevel = cluster.levelJoining(*lowest, *highest);
  if (span.outerLevel == 0) return span;
  const int innerDomain = cluster.levels[span.outerLevel - 1].domainSize;
  std::vector<int> domains(ranks.size());
  std::transform(ranks.begin(), ranks.end(), domains.begin(),
                 [&](int rank) { return rank / innerDomain; });
  if (!std::is_sorted(domains.begin(), domains.end())) std::sort(domains.begin(), domains.end());
  span.domains = 0;
  for (size_t i = 0; i < domains.size();) {
    size_t j = i;
    while (j < domains.size() && domains[j] == domains[i]) ++j;
    ++span.domains;
    span.perDomain = std::max(span.perDomain, static_cast<int>(j - i));
    i = j;
  }
  return span;
}

double log2Ceil(int p) { return std::ceil(std::log2(static_cast<double>(std::max(p, 1)))); }

/// Flat costs of one collective over p ranks on one level.
double flatSeconds(Collective collective, int p, double bytes, const LinkLevel& level,
                   Algorithm algorithm) {
  if (p <= 1) return 0;
  const double a = level.latencySeconds;
  const double b = level.bytesPerSecond;
  const double share = static_cast<double>(p - 1) / p;
  switch (collective) {
    case Collective::kAllReduce:
      return algorithm == Algorithm::kTree ? 2 * log2Ceil(p) * a + 2 * bytes / b
                                           : 2 * (p - 1) * a + 2 * share * bytes / b;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (p - 1) * a + share * bytes / b;
    case Collective::kBroadcast:
      return log2Ceil(p) * a + bytes / b;
    case Collective::kSendRecv:
      return a + bytes / b;
  }
  return 0;
}

/// Hierarchical cost: the inner k ranks on the inner level, the D domains on the outer level.
double hierarchicalSeconds(const Cluster& cluster, Collective collective, const Span& span,
                           double bytes) {
  const LinkLevel& inner = cluster.levels[span.outerLevel - 1];
  const LinkLevel& outer = cluster.levels[span.outerLevel];
  const int k = span.perDomain;
  const int d = span.domains;
  const double slice = bytes / k;
  switch (collective) {
    case Collective::kAllReduce: {
      const double innerPart =
          2 * flatSeconds(Collective::kReduceScatter, k, bytes, inner, Algorithm::kRing);
      const double outerRing = flatSeconds(collective, d, slice, outer, Algorithm::kRing);
      const double outerTree = flatSeconds(collective, d, slice, outer, Algorithm::kTree);
      return innerPart + std::min(outerRing, outerTree);
    }
    case Collective::kAllGather:
    case Collective::kReduceScatter:  // rings only (multiLevelRingSeconds)
    case Collective::kSendRecv:
      break;
    case Collective::kBroadcast:
      return flatSeconds(collective, d, bytes, outer, Algorithm::kTree) +
             flatSeconds(collective, k, bytes, inner, Algorithm::kTree);
    case Collective::kAllToAll: {
      // Data for other domains crosses the outer level; the rest stays inside.
      const double outsideShare = static_cast<double>(span.size - k) / span.size;
      const double insideShare = static_cast<double>(k - 1) / span.size;
      return (d - 1) * outer.latencySeconds + outsideShare * bytes / outer.bytesPerSecond +
             (k - 1) * inner.latencySeconds + insideShare * bytes / inner.bytesPerSecond;
    }
  }
  return 0;
}

/// NCCL's ring all-gather or reduce-scatter over a group spanning several domains (see above).
double multiLevelRingSeconds(const Cluster& cluster, const Span& span, double bytes) {
  const LinkLevel& inner = cluster.levels[span.outerLevel - 1];
  const LinkLevel& outer = cluster.levels[span.outerLevel];
  const int p = span.size;
  const int d = span.domains;
  const double latency = (p - d) * inner.latencySeconds + (d - 1) * outer.latencySeconds;
  const double secondsPerByte =
      std::max(1.0 / inner.bytesPerSecond, 1.0 / (span.perDomain * outer.bytesPerSecond));
  return latency + static_cast<double>(p - 1) / p * bytes * secondsPerByte;
}

}  // namespace

std::string_view collectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllToAll:
      return "all_to_all";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kSendRecv:
      return "send_recv";
  }
  return "unknown";
}

std::string_view algorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kNone:
      return "none";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kHierarchical:
      return "hierarchical";
    case Algorithm::kDirect:
      return "direct";
  }
  return "unknown";
}

CollectiveCost collectiveCost(const Cluster& cluster, Collective collective,
                              std::span<const int> ranks, int64_t bytes) {
  if (ranks.size() <= 1 || bytes <= 0) return CollectiveCost{};
  const Span span = spanOf(cluster, ranks);
  const LinkLevel& level = cluster.levels[span.outerLevel];
  const double n = static_cast<double>(bytes);
  if (collective == Collective::kSendRecv) {
    return CollectiveCost{flatSeconds(collective, 2, n, level, Algorithm::kDirect),
                          Algorithm::kDirect, span.outerLevel};
  }
  const bool ringOnly =
      collective == Collective::kAllGather || collective == Collective::kReduceScatter;
  if (ringOnly && span.outerLevel > 0 && span.domains > 1) {
    return CollectiveCost{multiLevelRingSeconds(cluster, span, n), Algorithm::kRing,
                          span.outerLevel};
  }
  const bool hasTree = collective == Collective::kAllReduce || collective == Collective::kBroadcast;
  CollectiveCost best{flatSeconds(collective, span.size, n, level, Algorithm::kRing),
                      collective == Collective::kBroadcast ? Algorithm::kTree : Algorithm::kRing,
                      span.outerLevel};
  if (hasTree && collective == Collective::kAllReduce) {
    const double tree = flatSeconds(collective, span.size, n, level, Algorithm::kTree);
    if (tree < best.seconds) best = {tree, Algorithm::kTree, span.outerLevel};
  }
  if (span.outerLevel > 0 && span.perDomain > 1 && span.domains > 1) {
    const double hierarchical = hierarchicalSeconds(cluster, collective, span, n);
    if (hierarchical < best.seconds)
      best = {hierarchical, Algorithm::kHierarchical, span.outerLevel};
  }
  return best;
}

}  // namespace autopar::cluster
