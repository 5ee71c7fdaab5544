#include "ir/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

namespace autopar::ir {

int64_t numElements(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    // Saturates instead of overflowing: a shape from an attribute (Reshape's new shape) is not
    // bounded the way graph tensors are (Graph::addTensor), and a saturated count only fails the
    // comparison it feeds.
    if (__builtin_mul_overflow(count, dim, &count)) return std::numeric_limits<int64_t>::max();
  }
  return count;
}

std::string shapeToString(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

}  // namespace autopar::ir
