#pragma once
/// \file
/// The equivalence check of `autopar check`: how far a sharded run's losses and parameters are
/// from the unsharded run's, as the worst relative difference and where it is.

#include <string>
#include <vector>

#include "ir/graph.h"
#include "rules/graph_sharding.h"
#include "runtime/result_file.h"
#include "util/expected.h"

namespace autopar::runtime {

/// The sharding that runs the whole graph on one rank (every cut 1): the reference `check`
/// compares against.
Expected<rules::GraphSharding> unshardedSharding(const ir::Graph& graph);

struct Difference {
  double value = 0;
  std::string where;  ///< "step 2 on rank 1", "layer0.fc1.weight on rank 3"
};

/// Per step and rank, |loss - reference loss| / |reference loss|, the worst of them.
Difference lossDifference(const RankResult& reference, const std::vector<RankResult>& ranks);

/// The worst relative difference of the ranks' parameter blocks from the reference's: per
/// parameter, max |block - reference| over max |reference|.
Difference parameterDifference(const RankResult& reference, const std::vector<RankResult>& ranks);

}  // namespace autopar::runtime
