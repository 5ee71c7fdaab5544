#pragma once
/// \file
/// Memory over time for the intra-operator local search: range add and range max over the
/// segments of a compressed timeline.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace autopar::search {

/// Range add, range max over the timeline's segments (hand-written: a lazy segment tree is a few
/// lines and no library in DESIGN.md's list has one).
class UsageTree {
 public:
  explicit UsageTree(size_t size)
      : size_(std::max<size_t>(size, 1)), max_(4 * size_), add_(4 * size_) {}
  void add(size_t lo, size_t hi, int64_t value) { add(1, 0, size_, lo, hi, value); }
  [[nodiscard]] int64_t max(size_t lo, size_t hi) const { return max(1, 0, size_, lo, hi); }
  /// The leftmost segment holding the maximum.
  [[nodiscard]] size_t argmax() const {
    size_t n = 1;
    size_t l = 0;
    size_t r = size_;
    while (r - l > 1) {
      const size_t m = (l + r) / 2;
      if (max_[2 * n] >= max_[2 * n + 1]) {
        n = 2 * n;
        r = m;
      } else {
        n = 2 * n + 1;
        l = m;
      }
    }
    return l;
  }

 private:
  void add(size_t n, size_t l, size_t r, size_t lo, size_t hi, int64_t value) {
    if (hi <= l || r <= lo) return;
    if (lo <= l && r <= hi) {
      max_[n] += value;
      add_[n] += value;
      return;
    }
    const size_t m = (l + r) / 2;
    add(2 * n, l, m, lo, hi, value);
    add(2 * n + 1, m, r, lo, hi, value);
    max_[n] = add_[n] + std::max(max_[2 * n], max_[2 * n + 1]);
  }
  [[nodiscard]] int64_t max(size_t n, size_t l, size_t r, size_t lo, size_t hi) const {
    if (hi <= l || r <= lo) return INT64_MIN / 4;
    if (lo <= l && r <= hi) return max_[n];
    const size_t m = (l + r) / 2;
    return add_[n] + std::max(max(2 * n, l, m, lo, hi), max(2 * n + 1, m, r, lo, hi));
  }
  size_t size_;
  std::vector<int64_t> max_;
  std::vector<int64_t> add_;
};

}  // namespace autopar::search
