#pragma once
/// \file
/// The "shard" field of an op in graph JSON: a user shard annotation in the seeds' strategy
/// notation, one list of cuts per input and one cut per dimension of that input.
///
/// Both spellings are accepted:
///   "shard": [[2, 4], [4, 1]]        (JSON lists)
///   "shard": "((2, 4), (4, 1))"      (the seeds' Python tuples, as in
///                                     `dense1.matmul.shard(((2, 4), (4, 1)))`; "(8,)" is a
///                                     one-dim input)
/// Whether the cuts divide the dimensions and fit the device count is checked later, by the
/// sharding rules; here only the structure (one list per input, rank entries, positive cuts).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/op.h"
#include "ir/tensor.h"
#include "util/expected.h"

namespace autopar::frontend {

/// Reads a shard annotation at `path` for an op whose inputs have `inputTypes`. Errors:
///   "ops[1].shard: expected one list of cuts per input (2 inputs), got 3"
///   "ops[1].shard[0]: expected one cut per dimension of inputs[0] (rank 2), got 3"
///   "ops[1].shard[0][1]: expected a positive integer, got 0"
Expected<ir::StrategyCuts> shardFromJson(const nlohmann::json& value, const std::string& path,
                                         const std::vector<ir::TensorType>& inputTypes);

/// The annotation as JSON lists, e.g. [[2, 4], [4, 1]].
nlohmann::json shardToJson(const ir::StrategyCuts& cuts);

}  // namespace autopar::frontend
