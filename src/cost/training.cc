#include "cost/training.h"

#include <fmt/format.h>

namespace autopar::cost {

Expected<Bucketing> parseBucketing(std::string_view text) {
  if (text == "none") return Bucketing::kNone;
  if (text == "size") return Bucketing::kBySize;
  if (text == "layer") return Bucketing::kByLayer;
  return Error{fmt::format("'{}': expected none, size or layer", text)};
}

std::string_view bucketingName(Bucketing bucketing) {
  switch (bucketing) {
    case Bucketing::kNone:
      return "none";
    case Bucketing::kBySize:
      return "size";
    case Bucketing::kByLayer:
      return "layer";
  }
  return "none";
}

}  // namespace autopar::cost
