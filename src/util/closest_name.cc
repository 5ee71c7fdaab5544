#include "util/closest_name.h"

#include <algorithm>

namespace autopar {

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string_view closestName(std::string_view name, const std::vector<std::string_view>& known) {
  return *std::min_element(known.begin(), known.end(), [&](std::string_view x, std::string_view y) {
    return editDistance(name, x) < editDistance(name, y);
  });
}

}  // namespace autopar
