#include "ir/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace autopar::ir {

int64_t numElements(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

std::string shapeToString(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

}  // namespace autopar::ir
