#pragma once
/// \file
/// The two small networks of seed 002 (MindSpore's sharding-propagation and double-recursive
/// examples), as fp32 graphs of one batch. Flatten is left out: the input is already [batch, 784].
///
/// Seed 002's FFN, 784 -> 512 -> 256 -> 128 -> 64 -> 10:
///   dense1.matmul   MatMul x [b,784] x dense1.weight [784,512]
///   dense1.bias_add Add    + dense1.bias [512]
///   relu1           ReLU
///   ... dense2, relu2, dense3, relu3, dense4, relu4, dense5 (no ReLU after dense5).
/// Each op's output tensor carries the op's name. The loss (CrossEntropyLoss in the seed) is not
/// part of the network whose ops the seed shards, so it is left out.

#include <cstdint>

#include "ir/graph.h"
#include "util/expected.h"

namespace autopar::frontend {

/// Seed 002's FFN (sharding-propagation example), 14 ops, 575,050 parameters.
Expected<ir::Graph> buildFfn(int64_t batch);

/// buildFfn with the seed's two annotations:
///   net.dense1.matmul.shard(((2, 4), (4, 1)))  and  net.dense3.matmul.shard(((1, 8), (8, 1)))
Expected<ir::Graph> buildAnnotatedFfn(int64_t batch);

/// Seed 002's double-recursive example: layer1 784 -> 512, relu1, layer2 512 -> 512, relu2,
/// layer3 512 -> 1; ops "layer1.matmul", "layer1.bias_add", "relu1", ... (8 ops, 665,089
/// parameters).
Expected<ir::Graph> buildSeedMlp(int64_t batch);

}  // namespace autopar::frontend
