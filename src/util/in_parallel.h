#pragma once
/// \file
/// Independent work run side by side. The planner's re-plans (a mem_coeff ladder's rungs, fit
/// advice's trials) are single-threaded and share nothing mutable, so a batch of them runs one per
/// core; their results come back in order, so what is chosen and printed does not depend on the
/// core count.
///   auto plans = inParallel(candidates.size(), [&](size_t i) { return plan(candidates[i]); });

#include <algorithm>
#include <cstddef>
#include <future>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sched.h>
#endif

namespace autopar::util {

/// Items run at once: the cores this process may run on (its affinity, which `taskset` and
/// container runtimes narrow; std::thread::hardware_concurrency counts the machine's), at most 4
/// (a plan of a large model holds tens of MB).
inline size_t parallelWidth() {
  size_t cores = std::thread::hardware_concurrency();
#ifdef __linux__
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
    cores = static_cast<size_t>(CPU_COUNT(&allowed));
  }
#endif
  return std::clamp<size_t>(cores, 1, 4);
}

/// fn(0), ..., fn(count - 1): the first on the calling thread, each other on its own; the results
/// in order. An exception from any of them is rethrown once all have finished.
template <class Fn>
auto inParallel(size_t count, Fn fn) -> std::vector<decltype(fn(size_t{0}))> {
  using Result = decltype(fn(size_t{0}));
  std::vector<std::future<Result>> others;
  for (size_t i = 1; i < count; ++i) others.push_back(std::async(std::launch::async, fn, i));
  std::vector<Result> results;
  results.reserve(count);
  if (count > 0) results.push_back(fn(0));
  for (auto& other : others) results.push_back(other.get());
  return results;
}

/// fn(0), ..., fn(count - 1), parallelWidth() at a time (inParallel in batches); the results in
/// order. For many items of similar cost, where a thread each would oversubscribe the cores.
template <class Fn>
auto inParallelBatches(size_t count, Fn fn) -> std::vector<decltype(fn(size_t{0}))> {
  std::vector<decltype(fn(size_t{0}))> results;
  results.reserve(count);
  const size_t width = parallelWidth();
  for (size_t start = 0; start < count; start += width) {
    auto batch =
        inParallel(std::min(width, count - start), [&](size_t i) { return fn(start + i); });
    for (auto& result : batch) results.push_back(std::move(result));
  }
  return results;
}

}  // namespace autopar::util
