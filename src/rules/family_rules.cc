#include "rules/family_rules.h"

#include <fmt/format.h>

namespace autopar::rules {

Status expectInputCount(const OpTypes& op, size_t count) {
  if (op.inputs.size() == count) return {};
  return Error{
      fmt::format("expected {} input{}, got {}", count, count == 1 ? "" : "s", op.inputs.size())};
}

Status expectRank(const OpTypes& op, size_t index, size_t rank, bool minimum) {
  const size_t actual = op.inputs.at(index).shape.size();
  if (minimum && actual >= rank) return {};
  if (!minimum && actual == rank) return {};
  return Error{fmt::format("inputs[{}] must {} {}, got rank {}", index,
                           minimum ? "have rank >=" : "be rank", rank, actual)};
}

Expected<int64_t> normalizeAxis(std::string_view field, int64_t axis, size_t rank) {
  const auto signedRank = static_cast<int64_t>(rank);
  if (axis < -signedRank || axis >= signedRank) {
    return Error{fmt::format("{} is {}, expected a value in [{}, {}]", field, axis, -signedRank,
                             signedRank - 1)};
  }
  return axis < 0 ? axis + signedRank : axis;
}

std::string indexedName(std::string_view prefix, size_t index, size_t count) {
  if (count == 1) return std::string(prefix);
  return fmt::format("{}{}", prefix, index);
}

}  // namespace autopar::rules
