#pragma once
/// \file
/// The largest value autopar accepts for each number that sizes its work (docs/limits.md). Each
/// is checked where the number enters (a flag, a yaml or JSON field), before anything is sized
/// by it; past it, the error names the field, the value and the limit, exit status 2. The limits
/// are generous for real training: far above the largest published runs.

#include <cstddef>
#include <cstdint>

namespace autopar::limits {

inline constexpr int64_t kMaxDevices = int64_t{1} << 20;  ///< devices in a cluster
inline constexpr int64_t kMaxDevicesPerNode = 1024;       ///< devices in one node
/// Transformer layers: 2,048 plan, estimate and search within 20 s on the 2-core CI machine
/// (BENCHMARKS.md, "Limits"), 16 times the deepest published model (Llama 3.1 405B, 126).
inline constexpr int64_t kMaxLayers = 2'048;
inline constexpr int64_t kMaxHidden = int64_t{1} << 20;        ///< hidden and FFN sizes
inline constexpr int64_t kMaxHeads = int64_t{1} << 16;         ///< attention heads
inline constexpr int64_t kMaxVocab = int64_t{1} << 24;         ///< vocabulary
inline constexpr int64_t kMaxSequence = int64_t{1} << 24;      ///< tokens in one sequence
inline constexpr int64_t kMaxMicroBatch = int64_t{1} << 16;    ///< samples in one micro-batch
inline constexpr int64_t kMaxMicroBatches = int64_t{1} << 16;  ///< micro-batches in one step
inline constexpr int64_t kMaxGlobalBatch = int64_t{1} << 20;   ///< samples in one step
inline constexpr int64_t kMaxThreads = 256;                    ///< solver threads
/// A name the outputs repeat (a model's, a device group's: util/label.h).
inline constexpr size_t kMaxNameLength = 256;
/// A text input (yaml, JSON) read whole: 1 GiB.
inline constexpr int64_t kMaxInputFileBytes = int64_t{1} << 30;
/// A pipe given as an input file (`--config /dev/stdin`) has this long to reach its end: 10 s.
inline constexpr int kMaxInputReadSeconds = 10;
/// A gzip-compressed IOPDDL file once inflated: 256 MiB (the public instances expand to 93 MB at
/// most), so a small file that inflates without end stops in about a second.
inline constexpr size_t kMaxDecompressedBytes = size_t{1} << 28;

/// Ops of a graph the whole-graph op-level searches take (`plan --search`), past which they would
/// not finish within a minute on the 2-core CI machine: sharding propagation grows faster than
/// linearly (5,400 ops in 4 s, 18,000 in 75 s), the double-recursive search and the ILP model
/// less so (BENCHMARKS.md, "Limits"). The semi-auto and data-parallel plans, and `autopar search`,
/// take any graph within the other limits.
inline constexpr int64_t kMaxPropagationOps = 10'000;
inline constexpr int64_t kMaxRecursiveOps = 20'000;
inline constexpr int64_t kMaxIlpOps = 10'000;

/// Nodes of a YAML document with its aliases expanded: a run yaml holds a few hundred, and an
/// alias bomb (anchors of anchors, each repeated) stops here instead of walking 10^11 nodes.
inline constexpr size_t kMaxYamlNodes = 100'000;

}  // namespace autopar::limits
